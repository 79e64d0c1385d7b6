package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/scenarios"
)

// holdVerdict is a run log that holds every run's "verdict:" line (its
// report is drawn; its servers still run) until the third cell's run has
// begun, or until the test's time is nearly up. It notes whether the
// third began while a verdict was held, and whether a hold ran out (a
// cell ended, and the third may have begun only then).
type holdVerdict struct {
	mu      sync.Mutex
	third   chan struct{} // closed once the third run's first line came
	closed  bool
	overlap bool // the third run began while a verdict was held
	ranOut  bool // a verdict was held until the limit
	limit   time.Duration
}

func (h *holdVerdict) Write(b []byte) (int, error) {
	h.mu.Lock()
	if bytes.Contains(b, []byte("backend redis-token, seed 3")) && !h.closed {
		h.closed = true
		close(h.third)
	}
	h.mu.Unlock()
	if bytes.Contains(b, []byte("verdict:")) {
		select {
		case <-h.third:
			h.mu.Lock()
			h.overlap = true
			h.mu.Unlock()
		case <-time.After(h.limit):
			h.mu.Lock()
			h.ranOut = true
			h.mu.Unlock()
		}
	}
	return len(b), nil
}

// TestLaneStartsNextCellAsClientsStop: two lanes of three Redis cells.
// The third cell begins once one of the first two's clients stopped,
// while both still report (their verdict lines are held until the third
// began); all come out as without, each with its own servers, and nothing
// is left once the matrix returns.
func TestLaneStartsNextCellAsClientsStop(t *testing.T) {
	requireRedis(t)
	d := 300 * time.Millisecond
	limit := time.Minute
	if dl, ok := t.Deadline(); ok {
		limit = min(limit, time.Until(dl)/2)
	}
	hv := &holdVerdict{third: make(chan struct{}), limit: limit}
	tmp := t.TempDir()
	out, err := RunMatrix(context.Background(), MatrixOptions{
		Scenarios: []string{"baseline"}, Backends: []string{"redis-token"}, Seeds: 3,
		Store: t.TempDir(), TempDir: tmp, Parallel: 2, Prestart: true,
		Overrides: scenarios.Overrides{Duration: &d}, Log: hv,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !hv.overlap || hv.ranOut {
		t.Errorf("the third cell began only after one of the first two ended (their verdict lines waited %s for it)", limit)
	}
	if len(out.Matrix.Cells) != 3 {
		t.Fatalf("%d cells, want 3", len(out.Matrix.Cells))
	}
	for i, c := range out.Matrix.Cells {
		if !c.AsExpected || c.Verdict != "valid" {
			t.Errorf("cell %d: %s, as expected %v: %s", i, c.Verdict, c.AsExpected, c.Why)
		}
		dir := filepath.Join(out.Dir, filepath.FromSlash(c.Dir))
		if logs, _ := filepath.Glob(filepath.Join(dir, "redis*.log")); len(logs) != 1 {
			t.Errorf("cell %d: server logs %v in its run, want its own redis log", i, logs)
		}
		if log, err := os.ReadFile(filepath.Join(dir, "run.log")); err != nil || !bytes.Contains(log, []byte("servers stopped")) {
			t.Errorf("cell %d: run.log does not say its servers stopped (%v):\n%s", i, err, log)
		}
	}
	assertNothingLeft(t, tmp)
}
