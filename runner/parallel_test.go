package runner

import (
	"context"
	"testing"
	"time"

	"github.com/locktorture/locktorture/matrix"

	"github.com/locktorture/locktorture/scenarios"
)

// TestMatrixParallelKeepsPlanOrder: cells run side by side land in the
// plan's order with the verdicts a one-by-one matrix gives, and every
// cell has a run directory of its own.
func TestMatrixParallelKeepsPlanOrder(t *testing.T) {
	// mutex is the negative control: baseline expects it caught, which
	// needs two processes to meet in the lock; 200ms under make test's
	// load once gave a cell no overlap (valid) and the verdicts differed.
	d := time.Second
	run := func(parallel int) *matrix.Matrix {
		t.Helper()
		out, err := RunMatrix(context.Background(), MatrixOptions{
			Scenarios: []string{"baseline"}, Backends: []string{"mutex"}, Seeds: 4,
			Store: t.TempDir(), TempDir: t.TempDir(), Parallel: parallel,
			Overrides: scenarios.Overrides{Duration: &d},
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.Matrix
	}
	serial, parallel := run(1), run(3)
	if len(serial.Cells) != 4 || len(parallel.Cells) != 4 {
		t.Fatalf("cells: %d serial, %d parallel; want 4", len(serial.Cells), len(parallel.Cells))
	}
	dirs := map[string]bool{}
	for i := range serial.Cells {
		s, p := serial.Cells[i], parallel.Cells[i]
		if s.CellKey != p.CellKey || s.Verdict != p.Verdict || s.AsExpected != p.AsExpected {
			t.Errorf("cell %d: serial %v %s, parallel %v %s", i, s.CellKey, s.Verdict, p.CellKey, p.Verdict)
		}
		if dirs[p.Dir] {
			t.Errorf("two cells share run directory %s", p.Dir)
		}
		dirs[p.Dir] = true
	}
}
