package matrix

import (
	"testing"
)

// TestFinishValid: a matrix is valid when every planned cell ran and came
// out as expected; an interrupted one, or one that ran nothing, is not.
func TestFinishValid(t *testing.T) {
	k := CellKey{Scenario: "baseline", Backend: "mutex", Seed: 1}
	m := &Matrix{Planned: []CellKey{k}, Cells: []Cell{{CellKey: k, Verdict: "invalid", Expected: "invalid", AsExpected: true}}}
	m.Finish()
	if !m.Valid || m.Kind != Kind {
		t.Errorf("every cell as expected: valid %v", m.Valid)
	}
	missing := &Matrix{Planned: []CellKey{k, {Scenario: "baseline", Backend: "mutex", Seed: 2}}, Cells: m.Cells}
	missing.Finish()
	if missing.Valid {
		t.Error("a matrix with a planned cell not run is not valid")
	}
	m.Interrupted = true
	m.Finish()
	if m.Valid {
		t.Error("an interrupted matrix is not valid")
	}
	empty := &Matrix{}
	empty.Finish()
	if empty.Valid {
		t.Error("a matrix that ran nothing is not valid")
	}
}
