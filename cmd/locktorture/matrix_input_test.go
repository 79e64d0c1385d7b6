package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oneLine fails t unless stderr is exactly one line starting with prefix
// and saying want.
func oneLine(t *testing.T, stderr, prefix, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], prefix) || !strings.Contains(lines[0], want) {
		t.Errorf("stderr is not one line %q... saying %q:\n%s", prefix, want, stderr)
	}
}

// TestShardCountBounded: --shard with more shards than MaxShards, or
// more than the plan has cells, is one line and exit 254 before anything
// runs or is planned out (it was a Go out-of-memory crash for
// 1/99999999999, and 24 s and 500 MB for --plan 1/10000000), for matrix
// and compare, with and without --plan.
func TestShardCountBounded(t *testing.T) {
	store := t.TempDir()
	matrixArgs := []string{"matrix", "--scenarios", "baseline", "--backends", "mutex,redis-token", "--store", store}
	compareArgs := []string{"compare", "--families", "pause", "--backends", "redis-token", "--seeds", "1", "--store", store}
	for _, tc := range []struct {
		name  string
		args  []string
		shard string
		want  string
	}{
		{"compare huge", compareArgs, "1/99999999999", "at most 1000 shards"},
		{"compare past the bound", compareArgs, "1/1001", "at most 1000 shards"},
		{"compare more than cells", compareArgs, "1/1000", "the plan has 2 cells: at most 2 shards"},
		{"compare last of more than cells", compareArgs, "1000/1000", "the plan has 2 cells"},
		{"matrix huge", matrixArgs, "1/99999999999", "at most 1000 shards"},
		{"matrix more than cells", matrixArgs, "3/3", "the plan has 2 cells: at most 2 shards"},
	} {
		for _, plan := range []bool{true, false} {
			name := tc.name
			args := append(append([]string(nil), tc.args...), "--shard", tc.shard)
			if plan {
				name, args = name+" --plan", append(args, "--plan")
			}
			t.Run(name, func(t *testing.T) {
				code, out, stderr := runCLI(t, args...)
				if code != exitBadArgs {
					t.Fatalf("exit %d, want %d\n%.500s\n%.500s", code, exitBadArgs, out, stderr)
				}
				if out != "" {
					t.Errorf("stdout: %.500s", out)
				}
				oneLine(t, stderr, "locktorture "+args[0]+": ", tc.want)
			})
		}
	}
	if ents, _ := os.ReadDir(store); len(ents) != 0 {
		t.Errorf("a refused --shard wrote to the store: %v", ents)
	}
	// As many shards as cells is fine.
	if code, out, stderr := runCLI(t, append(matrixArgs, "--shard", "2/2", "--plan")...); code != exitValid || !strings.Contains(out, "shard 2/2: 1 cell") {
		t.Errorf("--shard 2/2 of 2 cells: exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestLinearizableTimeoutPositive: --linearizable-timeout of zero or
// less (analyze, matrix, compare) is one line naming the flag and exit
// 254, before anything is read or runs; it was silently the 30 s
// default.
func TestLinearizableTimeoutPositive(t *testing.T) {
	const hist = `{"index":0,"time":100,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":200,"process":0,"type":"ok","f":"acquire","key":"k0"}
{"index":2,"time":300,"process":0,"type":"invoke","f":"release","key":"k0"}
{"index":3,"time":400,"process":0,"type":"ok","f":"release","key":"k0"}
`
	store := t.TempDir()
	for _, cmd := range [][]string{
		{"analyze"},
		{"matrix", "--scenarios", "baseline", "--backends", "mutex", "--plan", "--store", store},
		{"compare", "--families", "pause", "--backends", "redis-token", "--seeds", "1", "--plan", "--store", store},
	} {
		for _, v := range []string{"-5s", "0", "0s", "-1ns"} {
			t.Run(cmd[0]+" "+v, func(t *testing.T) {
				args := append(append([]string(nil), cmd...), "--linearizable-timeout", v)
				var h string
				if cmd[0] == "analyze" {
					h = writeFile(t, "history.jsonl", hist)
					args = append(args, h)
				}
				code, out, stderr := runCLI(t, args...)
				if code != exitBadArgs {
					t.Fatalf("exit %d, want %d\n%s\n%s", code, exitBadArgs, out, stderr)
				}
				oneLine(t, stderr, "locktorture "+cmd[0]+": ", "-linearizable-timeout")
				if !strings.Contains(stderr, "more than 0") {
					t.Errorf("stderr does not say the limit must be more than 0: %s", stderr)
				}
				if h != "" {
					if ents, _ := os.ReadDir(filepath.Dir(h)); len(ents) != 1 {
						t.Errorf("a refused analyze wrote beside the history: %v", ents)
					}
				}
			})
		}
	}
	// A positive limit is taken.
	h := writeFile(t, "history.jsonl", hist)
	if code, out, stderr := runCLI(t, "analyze", "--linearizable-timeout", "2s", h); code != exitValid {
		t.Errorf("analyze --linearizable-timeout 2s: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, "matrix", "--scenarios", "baseline", "--backends", "mutex", "--plan", "--linearizable-timeout", "1m"); code != exitValid {
		t.Errorf("matrix --linearizable-timeout 1m: exit %d\n%s\n%s", code, out, stderr)
	}
}
