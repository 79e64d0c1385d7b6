package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/matrix"
)

func TestLibraryArgs(t *testing.T) {
	tests := []struct {
		args       []string
		libs, rest []string
	}{
		{[]string{"--families", "pause", "--library", "github.com/redis/rueidis@v1.0.50", "--quiet"}, []string{"github.com/redis/rueidis@v1.0.50"}, []string{"--families", "pause", "--quiet"}},
		{[]string{"-library=m@v1,v2", "--library", "n@v3"}, []string{"m@v1,v2", "n@v3"}, nil},
		{[]string{"--families", "pause"}, nil, []string{"--families", "pause"}},
	}
	for _, tt := range tests {
		libs, rest, ok := libraryArgs(tt.args)
		if ok != (len(tt.libs) > 0) || !slices.Equal(libs, tt.libs) || !slices.Equal(rest, tt.rest) {
			t.Errorf("libraryArgs(%q) = %q, %q, %v; want %q, %q", tt.args, libs, rest, ok, tt.libs, tt.rest)
		}
	}
}

// TestCompareFlagArgs: a version's comparison gets the user's flags but
// its own store and rows, and no --exec rows; a bool flag takes no value.
func TestCompareFlagArgs(t *testing.T) {
	args := []string{"--quiet", "--families", "renew-partition", "--store=/s", "--backends", "zk-lock,redis-token", "--exec", "mine=prog x", "--seeds", "1"}
	fas := compareFlagArgs(args)
	if got := flagValue(fas, "backends"); got != "zk-lock,redis-token" {
		t.Errorf("backends %q", got)
	}
	if got := flagValue(fas, "store"); got != "/s" {
		t.Errorf("store %q", got)
	}
	got := withFlags(fas, []string{"store", "backends", "exec"}, "--store", "/p", "--backends", "zk-lock")
	want := []string{"--quiet", "--families", "renew-partition", "--seeds", "1", "--store", "/p", "--backends", "zk-lock"}
	if !slices.Equal(got, want) {
		t.Errorf("withFlags = %q, want %q", got, want)
	}
	if !*boolFlag(fas, "quiet") || *boolFlag(fas, "plan") {
		t.Errorf("quiet %v plan %v", *boolFlag(fas, "quiet"), *boolFlag(fas, "plan"))
	}
}

// TestJoinVersion: a version's rows come in as ROW@V right after ROW (and
// after ROW's earlier versions), with their cells, plan and skips.
func TestJoinVersion(t *testing.T) {
	m := &matrix.Matrix{Backends: []string{"redis-token", "zk-lock", "etcd"}, Scenarios: []string{"baseline"},
		Cells: []matrix.Cell{{CellKey: matrix.CellKey{Scenario: "baseline", Backend: "zk-lock", Seed: 1}}}}
	for _, v := range []string{"v1.0.2", "v1.0.3"} {
		pm := &matrix.Matrix{Backends: []string{"zk-lock"}, Scenarios: []string{"baseline", "renew-partition"},
			Planned: []matrix.CellKey{{Scenario: "renew-partition", Backend: "zk-lock", Seed: 1}},
			Skipped: []matrix.Skipped{{Scenario: "x", Backend: "zk-lock", Why: "no"}},
			Cells:   []matrix.Cell{{CellKey: matrix.CellKey{Scenario: "renew-partition", Backend: "zk-lock", Seed: 1}}}}
		joinVersion(m, pm, v)
	}
	if want := []string{"redis-token", "zk-lock", "zk-lock@v1.0.2", "zk-lock@v1.0.3", "etcd"}; !slices.Equal(m.Backends, want) {
		t.Errorf("backends %v, want %v", m.Backends, want)
	}
	if len(m.Cells) != 3 || m.Cells[1].Backend != "zk-lock@v1.0.2" || m.Cells[2].Backend != "zk-lock@v1.0.3" {
		t.Errorf("cells %+v", m.Cells)
	}
	if len(m.Planned) != 2 || m.Planned[0].Backend != "zk-lock@v1.0.2" || len(m.Skipped) != 2 || m.Skipped[1].Backend != "zk-lock@v1.0.3" {
		t.Errorf("planned %+v skipped %+v", m.Planned, m.Skipped)
	}
	if !slices.Equal(m.Scenarios, []string{"baseline", "renew-partition"}) {
		t.Errorf("scenarios %v", m.Scenarios)
	}
}

// TestCompareLibraryBadInput: refused before anything is built or run.
func TestCompareLibraryBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no version", []string{"compare", "--library", "github.com/redis/rueidis"}, "want MODULE@V1,V2"},
		{"no row uses it", []string{"compare", "--library", "github.com/bsm/nothing@v1.0.0"}, "no row's library is that Go module"},
		{"not a version", []string{"compare", "--library", "github.com/go-zookeeper/zk@latest"}, "is not a version"},
		{"rows left out by --backends", []string{"compare", "--backends", "redis-token", "--library", "github.com/go-zookeeper/zk@v1.0.3"}, "none of --backends uses it"},
		{"with --shard", []string{"compare", "--shard", "1/2", "--library", "github.com/go-zookeeper/zk@v1.0.3"}, "not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			if code != exitBadArgs {
				t.Fatalf("exit %d, want %d: %s%s", code, exitBadArgs, out, errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr %q, want it to say %q", errOut, tt.want)
			}
		})
	}
}
