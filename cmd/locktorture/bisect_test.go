package main

import (
	"slices"
	"strings"
	"testing"
)

// TestBisectBadInput: what bisect refuses, before it builds or runs
// anything, with one line and exit 254.
func TestBisectBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no id", []string{"bisect"}, "give one finding id"},
		{"unknown id", []string{"bisect", "no-such-finding"}, "unknown finding"},
		{"a Debian package's finding", []string{"bisect", "sentinel-failover"}, "bisect covers Go modules; its versions are the Debian suites'"},
		{"bad range", []string{"bisect", "zk-lock-kill-session", "--versions", "latest..v1.0.4"}, "is not a module version"},
		{"backwards range", []string{"bisect", "zk-lock-kill-session", "--versions", "v1.0.4..v1.0.2"}, "FROM is newer than TO"},
		{"no seeds", []string{"bisect", "zk-lock-kill-session", "--seeds", "0"}, "give at least 1"},
		{"no source tree", []string{"bisect", "zk-lock-kill-session", "--source", "/"}, "no locktorture source tree at hand"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			if code != exitBadArgs {
				t.Fatalf("exit %d, want %d: %s%s", code, exitBadArgs, out, errOut)
			}
			if !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("stderr %q, want one line saying %q", errOut, tt.want)
			}
		})
	}
}

func TestBisectSeeds(t *testing.T) {
	tests := []struct {
		own  []int64
		n    int
		want []int64
	}{
		{[]int64{1, 2, 3}, 2, []int64{1, 2}},
		{[]int64{1, 2, 3}, 5, []int64{1, 2, 3, 4, 5}},
		{[]int64{7}, 3, []int64{7, 8, 9}},
		{nil, 2, []int64{1, 2}},
	}
	for _, tt := range tests {
		if got := bisectSeeds(tt.own, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("bisectSeeds(%v, %d) = %v, want %v", tt.own, tt.n, got, tt.want)
		}
	}
}
