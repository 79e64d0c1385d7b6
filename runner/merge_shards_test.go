package runner

import (
	"path/filepath"
	"testing"

	"github.com/locktorture/locktorture/matrix"
)

// TestMergeTakesCutShard: a store whose only matrix was interrupted (a CI
// shard stopped by its job's time limit) gives that matrix to a merge, its
// cells that ran counted and the rest missing; a store with a complete one
// still gives the complete one.
func TestMergeTakesCutShard(t *testing.T) {
	key := func(seed int64) matrix.CellKey {
		return matrix.CellKey{Scenario: "baseline", Backend: "redis-token", Seed: seed}
	}
	write := func(store, started string, interrupted bool) string {
		m := &matrix.Matrix{Kind: matrix.Kind, Shard: "1/1", Started: started, Planned: []matrix.CellKey{key(1), key(2)}, Interrupted: interrupted,
			Cells: []matrix.Cell{{CellKey: key(1), Verdict: "valid", Expected: "valid", AsExpected: true}}}
		d := filepath.Join(store, "matrix", started)
		if err := matrix.Write(d, m); err != nil {
			t.Fatal(err)
		}
		return d
	}
	store := t.TempDir()
	cut := write(store, "20260101T000000", true)
	if d, err := resolveMatrixDir(store); err != nil || d != cut {
		t.Fatalf("a store holding only an interrupted matrix: %q, %v; want %s", d, err, cut)
	}
	out, err := MergeMatrix(t.Context(), []string{store}, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, _, missing := out.Matrix.Counts(); ok != 1 || missing != 1 || out.Matrix.Valid {
		t.Errorf("merged cut shard: %d as expected, %d missing, valid %v", ok, missing, out.Matrix.Valid)
	}
	whole := write(store, "20251231T000000", false)
	if d, err := resolveMatrixDir(store); err != nil || d != whole {
		t.Errorf("a store with a complete matrix and a newer interrupted one: %q, %v; want %s", d, err, whole)
	}
}
