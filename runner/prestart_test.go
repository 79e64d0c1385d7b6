package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/leakcheck"
	"github.com/locktorture/locktorture/scenarios"
)

// aheadLine is what run.log says of a run whose servers a lane started ahead.
const aheadLine = "servers started ahead"

// TestMatrixPrestartLane: one lane of three PostgreSQL cells. With
// Prestart, every cell's servers but the first's were started while the
// cell before ran (its run.log says so), each run has servers of its own
// (its own log), the followed cell's ops reach Observe, and the verdicts
// are those without; without Prestart no cell's were.
func TestMatrixPrestartLane(t *testing.T) {
	requirePostgres(t)
	d := 300 * time.Millisecond
	for _, prestart := range []bool{true, false} {
		t.Run(fmt.Sprint("prestart ", prestart), func(t *testing.T) {
			tmp := t.TempDir()
			var observed atomic.Int64
			out, err := RunMatrix(context.Background(), MatrixOptions{
				Scenarios: []string{"baseline"}, Backends: []string{"pg-advisory"}, Seeds: 3,
				Store: t.TempDir(), TempDir: tmp, Parallel: 1, Prestart: prestart,
				Overrides: scenarios.Overrides{Duration: &d},
				Observe:   func(history.Op) { observed.Add(1) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Matrix.Cells) != 3 {
				t.Fatalf("%d cells, want 3", len(out.Matrix.Cells))
			}
			var ops int64
			for i, c := range out.Matrix.Cells {
				if !c.AsExpected || c.Verdict != "valid" {
					t.Errorf("cell %d: %s, as expected %v: %s", i, c.Verdict, c.AsExpected, c.Why)
				}
				ops += int64(c.Ops)
				dir := filepath.Join(out.Dir, filepath.FromSlash(c.Dir))
				log, err := os.ReadFile(filepath.Join(dir, "run.log"))
				if err != nil {
					t.Fatal(err)
				}
				want := prestart && i > 0
				if got := bytes.Contains(log, []byte(aheadLine)); got != want {
					t.Errorf("cell %d (seed %d): run.log says servers started ahead: %v, want %v", i, c.Seed, got, want)
				}
				if logs, _ := filepath.Glob(filepath.Join(dir, "postgres*.log")); len(logs) != 1 {
					t.Errorf("cell %d: server logs %v in its run, want its own postgres log", i, logs)
				}
			}
			if got := observed.Load(); got != ops {
				t.Errorf("Observe saw %d ops; the cells recorded %d", got, ops)
			}
			assertNothingLeft(t, tmp)
		})
	}
}

// TestMatrixPrestartTwoLanes: two lanes of four PostgreSQL cells between
// them. Each lane's first cell starts its own servers, and each lane whose
// clients finish while a cell is left starts that one's ahead: one or two
// cells started ahead; every verdict as without, nothing left.
func TestMatrixPrestartTwoLanes(t *testing.T) {
	requirePostgres(t)
	d := 300 * time.Millisecond
	tmp := t.TempDir()
	out, err := RunMatrix(context.Background(), MatrixOptions{
		Scenarios: []string{"baseline"}, Backends: []string{"pg-advisory"}, Seeds: 4,
		Store: t.TempDir(), TempDir: tmp, Parallel: 2, Prestart: true,
		Overrides: scenarios.Overrides{Duration: &d},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Matrix.Cells) != 4 {
		t.Fatalf("%d cells, want 4", len(out.Matrix.Cells))
	}
	ahead := 0
	for i, c := range out.Matrix.Cells {
		if !c.AsExpected || c.Verdict != "valid" {
			t.Errorf("cell %d: %s, as expected %v: %s", i, c.Verdict, c.AsExpected, c.Why)
		}
		log, err := os.ReadFile(filepath.Join(out.Dir, filepath.FromSlash(c.Dir), "run.log"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(log, []byte(aheadLine)) {
			ahead++
		}
	}
	if ahead < 1 || ahead > 2 {
		t.Errorf("%d of 4 cells' servers started ahead, want 1 or 2 (each lane's first cell starts its own)", ahead)
	}
	assertNothingLeft(t, tmp)
}

// TestMatrixPrestartInterrupted: a lane interrupted while the next cell's
// servers start, once they are up, or as the cell before ends, stops them:
// no server process, no listener, no temporary directory is left, and the
// cell that never ran leaves no run in the store.
func TestMatrixPrestartInterrupted(t *testing.T) {
	requirePostgres(t)
	d := time.Second
	for _, tc := range []struct {
		name, marker string
		nth          int
	}{
		// The second cell's run opens its store just before its servers start.
		{"while the servers start", "backend pg-advisory, seed 2", 1},
		// The second "server up" is the second cell's, started ahead.
		{"with the servers up", "server up", 2},
		// The first cell reported: the second's are up, or nearly.
		{"as the first cell ends", "verdict:", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Other tests of the package may keep servers of their own
			// running (shared between tests): only what this matrix leaves
			// counts.
			kidsBefore, listenersBefore := children(os.Getpid()), leakcheck.Listeners(os.Getpid())
			tmp, store := t.TempDir(), t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, err := RunMatrix(ctx, MatrixOptions{
				Scenarios: []string{"baseline"}, Backends: []string{"pg-advisory"}, Seeds: 3,
				Store: store, TempDir: tmp, Parallel: 1, Prestart: true,
				Overrides: scenarios.Overrides{Duration: &d},
				Log:       &cancelAt{marker: []byte(tc.marker), nth: tc.nth, cancel: cancel},
			})
			if !errors.Is(err, ErrInterrupted) {
				t.Fatalf("want ErrInterrupted, got %v", err)
			}
			assertNothingLeft(t, tmp)
			if kids := added(kidsBefore, children(os.Getpid())); len(kids) > 0 {
				t.Errorf("processes left: %v", kids)
			}
			if l := added(listenersBefore, leakcheck.Listeners(os.Getpid())); len(l) > 0 {
				t.Errorf("ports still listened on: %v", l)
			}
			runs, _ := filepath.Glob(filepath.Join(store, "baseline", "pg-advisory", "*", "run.log"))
			for _, p := range runs {
				if b, _ := os.ReadFile(p); !bytes.Contains(b, []byte("seed 1\n")) {
					t.Errorf("%s: a run left of a cell that never ran:\n%s", p, b)
				}
			}
		})
	}
}

// cancelAt is a run log that cancels the matrix when the nth line
// containing marker is logged.
type cancelAt struct {
	mu     sync.Mutex
	marker []byte
	nth    int
	cancel context.CancelFunc
}

func (c *cancelAt) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Contains(b, c.marker) {
		if c.nth--; c.nth == 0 {
			c.cancel()
		}
	}
	return len(b), nil
}

// added lists what is in after and was not in before.
func added[T comparable](before, after []T) []T {
	seen := make(map[T]bool, len(before))
	for _, b := range before {
		seen[b] = true
	}
	var out []T
	for _, a := range after {
		if !seen[a] {
			out = append(out, a)
		}
	}
	return out
}

// children lists "pid: command" of the processes whose parent is pid.
func children(pid int) []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil && ppid == pid {
			out = append(out, filepath.Base(filepath.Dir(p))+": "+s[strings.IndexByte(s, '(')+1:end])
		}
	}
	return out
}
