package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/shrink"
)

func TestShrinkRefuses(t *testing.T) {
	sc := "name: x\nbackend: redis-token\n"
	tests := []struct {
		name  string
		args  func(dir string) []string
		files map[string]string
		want  string
	}{
		{"no run", func(d string) []string { return []string{"shrink", d} }, nil, "no stored run in"},
		{"a valid run", func(d string) []string { return []string{"shrink", d} },
			map[string]string{"history.jsonl": "", "results.json": `{"valid":true,"checkers":{}}`, "scenario.yaml": sc}, "is valid; only a failing run shrinks"},
		{"no faults", func(d string) []string { return []string{"shrink", "--reruns", "2", d} },
			map[string]string{"history.jsonl": `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"k0"}` + "\n",
				"results.json": `{"valid":false,"checkers":{"mutex":{"valid":false}}}`, "scenario.yaml": sc}, "no faults to drop"},
		{"no RUN", func(string) []string { return []string{"shrink"} }, nil, "Usage: locktorture shrink"},
		{"two RUNs", func(d string) []string { return []string{"shrink", d, d} }, nil, "Usage: locktorture shrink"},
		{"no reruns", func(d string) []string { return []string{"shrink", "--reruns", "0", d} }, nil, "--reruns must be 1 or more"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			for n, s := range tc.files {
				if err := os.WriteFile(filepath.Join(d, n), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var out, errb bytes.Buffer
			if code := run(tc.args(d), &out, &errb); code != exitBadArgs {
				t.Fatalf("exit %d, want %d; stderr: %s", code, exitBadArgs, errb.String())
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("stderr %q lacks %q", errb.String(), tc.want)
			}
			if tc.name != "no RUN" && tc.name != "two RUNs" && strings.Count(strings.TrimSpace(errb.String()), "\n") > 0 {
				t.Errorf("want one line, got %q", errb.String())
			}
			if _, err := os.Stat(filepath.Join(d, "shrink.log")); err == nil {
				t.Error("a refused shrink wrote shrink.log")
			}
		})
	}
}

// TestShrinkKeepsEarlierLog: a shrink that writes no scenario (here
// interrupted before any candidate failed) leaves an earlier shrink's
// shrunk.yaml and shrink.log as they were; its own log is shrink-last.log.
func TestShrinkKeepsEarlierLog(t *testing.T) {
	requireRedis(t)
	d := t.TempDir()
	files := map[string]string{
		"history.jsonl": `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"k0"}` + "\n" +
			`{"index":1,"time":2,"process":-1,"type":"info","f":"start-pause","value":{"process":0,"ms":500}}` + "\n" +
			`{"index":2,"time":3,"process":-1,"type":"info","f":"stop-pause","value":{"process":0}}` + "\n",
		"results.json":  `{"valid":false,"checkers":{"mutex":{"valid":false}}}`,
		"scenario.yaml": "name: x\nbackend: redis-token\n",
		"shrunk.yaml":   "earlier\n",
		"shrink.log":    "the earlier shrink's log\n",
	}
	for n, s := range files {
		if err := os.WriteFile(filepath.Join(d, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := shrinkDir(ctx, d, shrink.Options{Reruns: 1, TempDir: t.TempDir()})
	if err == nil || (res != nil && res.Shrunk != nil) {
		t.Fatalf("an interrupted shrink: %v, %+v", err, res)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "shrink.log")); string(b) != files["shrink.log"] {
		t.Errorf("shrink.log now %q, want the earlier shrink's", b)
	}
	if _, err := os.Stat(filepath.Join(d, "shrink-last.log")); err != nil {
		t.Errorf("no shrink-last.log: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(d, ".shrink-*")); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}
