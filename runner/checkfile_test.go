package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/histgen"
	"github.com/locktorture/locktorture/scenarios"
)

// writeHistory writes ops to a history.jsonl in a new directory.
func writeHistory(t *testing.T, ops []history.Op) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if err := history.WriteAll(w, ops); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// TestCheckFileMatchesCheck: the streaming pass over the file gives the
// results check gives on the history in memory — on a healthy history, and
// on one the stream cannot take (a process invoking twice), which it hands
// to check.
func TestCheckFileMatchesCheck(t *testing.T) {
	healthy := histgen.Realistic(3, 16, 4, 20000)
	twice := histgen.Realistic(4, 4, 2, 2000)
	for i := range twice {
		if twice[i].Type == history.Invoke && twice[i].Process == 1 {
			twice = append(twice[:i+1:i+1], append([]history.Op{twice[i]}, twice[i+1:]...)...)
			break
		}
	}
	for i := range twice {
		twice[i].Index = int64(i)
	}
	for name, ops := range map[string][]history.Op{"healthy": healthy, "invokes twice": twice} {
		t.Run(name, func(t *testing.T) {
			path := writeHistory(t, ops)
			fc, err := checkFile(context.Background(), path, nil, Options{}, nil)
			if err != nil || fc.truncated != nil {
				t.Fatal(err, fc.truncated)
			}
			got := fc.res
			want, err := check(context.Background(), ops, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Fatalf("streaming pass:\n%s\nin memory:\n%s", g, w)
			}
			if got.Ops != len(ops) || got.Checkers.Stats == nil || got.Checkers.Stats.Holds == 0 {
				t.Fatalf("checked %d ops of %d, stats %+v", got.Ops, len(ops), got.Checkers.Stats)
			}
		})
	}
}

// TestReportOpsExcerpt: a history longer than maxReportOps is drawn from a
// stretch of maxReportOps ops — its first, or those around the first
// violation — read again from the file (checkFile keeps none of its ops).
func TestReportOpsExcerpt(t *testing.T) {
	saved := maxReportOps
	maxReportOps = 100
	defer func() { maxReportOps = saved }()
	ops := histgen.Realistic(5, 4, 2, 1000)
	path := writeHistory(t, ops)
	fc, err := checkFile(context.Background(), path, nil, Options{}, nil)
	if err != nil || len(fc.first) != 0 {
		t.Fatalf("kept %d ops of a long history, want none (%v)", len(fc.first), err)
	}
	for _, at := range []int{0, 30, 700} {
		res := &checker.Results{Ops: len(ops)}
		if at > 0 {
			res.Checkers.Mutex = &checker.MutexResult{Violations: []checker.Overlap{{Later: checker.Hold{Start: ops[at].Time}, Start: ops[at].Time}}}
		}
		got, long, err := reportOps(context.Background(), path, res, fc)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != maxReportOps || long == nil || long.density == nil {
			t.Fatalf("violation at op %d: %d ops (%+v), want %d", at, len(got), long, maxReportOps)
		}
		line := long.excerpt
		t.Logf("violation at op %d: %s", at, line)
		lo, hi := got[0].Index, got[len(got)-1].Index
		if hi-lo != int64(maxReportOps-1) {
			t.Fatalf("ops %d–%d are not a stretch of %d", lo, hi, maxReportOps)
		}
		if at > 0 && (ops[at].Time < got[0].Time || ops[at].Time > got[len(got)-1].Time) {
			t.Errorf("violation at op %d (time %d) is outside ops %d–%d", at, ops[at].Time, lo, hi)
		}
		if at == 0 && lo != 0 {
			t.Errorf("no violation: ops %d–%d, want the first", lo, hi)
		}
	}
	// A short history is drawn whole.
	got, long, err := reportOps(context.Background(), path, &checker.Results{Ops: 50}, fc)
	if err != nil || len(got) != 50 || long != nil {
		t.Fatalf("short history: %d ops, %+v, %v", len(got), long, err)
	}
}

// TestRunLogsVerdictSoFar: run.log gets the verdict so far while clients
// run (every liveEvery) and when they stop — here the in-process mutex,
// whose overlaps show up live, as the checker finds them after.
func TestRunLogsVerdictSoFar(t *testing.T) {
	saved := liveEvery
	liveEvery = 300 * time.Millisecond
	defer func() { liveEvery = saved }()
	backend, d := "mutex", 1500*time.Millisecond
	out, _ := runIt(t, builtin(t, "baseline", scenarios.Overrides{Backend: &backend, Duration: &d}))
	b, err := os.ReadFile(filepath.Join(out.Dir, "run.log"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if n := strings.Count(log, "so far: "); n < 2 {
		t.Errorf("%d 'so far' lines in run.log, want one every %v of %v:\n%s", n, liveEvery, d, log)
	}
	i := strings.Index(log, "clients done: ")
	if i < 0 || !strings.Contains(log[i:], " of 1.5s, ") || !strings.Contains(log[i:], " holds, ") || !strings.Contains(log[i:], "stale holder") || !strings.Contains(log[i:], "RSS ") {
		t.Fatalf("no final verdict-so-far line in run.log:\n%s", log)
	}
	if out.Results.Checkers.Mutex.Count > 0 && strings.Contains(log[i:], " 0 overlaps") {
		t.Errorf("the checker found %d overlaps, the live line none:\n%s", out.Results.Checkers.Mutex.Count, log[i:])
	}
}

// TestKeeperHoldsNoLongHistory: checkFile keeps no op of a history whose
// file can hold maxReportOps ops (held through the pass, they were half of
// what analyze held): its report reads the first ops again, as many as it
// draws, and nothing more. A shorter history's ops are kept, in room made
// once, not in a slice grown as they came (which allocated, cleared and
// copied several times their size).
func TestKeeperHoldsNoLongHistory(t *testing.T) {
	saved := maxReportOps
	maxReportOps = 20000
	defer func() { maxReportOps = saved }()
	opSize := uint64(unsafe.Sizeof(history.Op{}))
	for _, c := range []struct {
		ops  int
		kept bool
	}{{30000, false}, {15000, false}, {500, true}, {5, true}} {
		t.Run(fmt.Sprint(c.ops), func(t *testing.T) {
			ops := histgen.Realistic(5, 8, 4, c.ops) // and a final read of each key
			path := writeHistory(t, ops)
			var fc fileCheck
			keep := fc.keeper(path)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := range ops {
				keep(&ops[i])
			}
			runtime.ReadMemStats(&after)
			grew := after.TotalAlloc - before.TotalAlloc
			if !c.kept {
				if len(fc.first) != 0 || grew > opSize*uint64(len(ops))/10 {
					t.Fatalf("kept %d ops of a long history, %d bytes allocated", len(fc.first), grew)
				}
			} else {
				if len(fc.first) != len(ops) || fc.first[len(ops)-1].Index != int64(len(ops)-1) {
					t.Fatalf("kept %d ops, want all %d", len(fc.first), len(ops))
				}
				if grew > opSize*uint64(len(ops))/2+4096 {
					t.Errorf("keeping %d ops (%d bytes) allocated %d bytes more as they came", len(ops), opSize*uint64(len(ops)), grew)
				}
			}
			got, long, err := reportOps(context.Background(), path, &checker.Results{Ops: len(ops)}, fc)
			want := min(len(ops), maxReportOps)
			if err != nil || len(got) != want || got[want-1].Index != int64(want-1) || (long == nil) != (len(ops) <= maxReportOps) {
				t.Fatalf("report of %d ops: %d ops, %+v, %v", len(ops), len(got), long, err)
			}
		})
	}
}
