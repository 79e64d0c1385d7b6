package matrix

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMergeCompareShards: a merge of a comparison's (or version matrix's)
// shards stays a comparison with its version sets; a cell of a shard that
// never came is missing, naming the shard; a fenced cell's plan is told
// from the plain one's.
func TestMergeCompareShards(t *testing.T) {
	plain := CellKey{Scenario: "pause", Backend: "redis-token", Seed: 1, Version: "trixie"}
	fenced := CellKey{Scenario: "pause", Backend: "redis-token", Seed: 1, Fencing: "all", Version: "trixie"}
	other := CellKey{Scenario: "baseline", Backend: "redis-token", Seed: 1, Version: "trixie"}
	planned := []CellKey{other, plain, fenced}
	shard := func(i string, cells ...CellKey) string {
		m := &Matrix{Kind: Kind, Compare: true, Shard: i, Planned: planned, Versions: []Version{{Name: "trixie"}}}
		for _, k := range cells {
			m.Cells = append(m.Cells, Cell{CellKey: k, Verdict: "valid", Expected: "valid", AsExpected: true})
		}
		d := filepath.Join(t.TempDir(), "m")
		if err := Write(d, m); err != nil {
			t.Fatal(err)
		}
		return d
	}
	s1, s3 := shard("1/3", plain), shard("3/3", other)
	m, err := Merge([]string{s1, s3}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !m.Compare || len(m.Versions) != 1 || m.Valid {
		t.Errorf("merged: compare %v, versions %v, valid %v", m.Compare, m.Versions, m.Valid)
	}
	var missing []Cell
	for _, c := range m.Cells {
		if c.Verdict == VerdictMissing {
			missing = append(missing, c)
		}
	}
	if len(missing) != 1 || missing[0].CellKey != fenced || !strings.Contains(missing[0].Why, "shard 2/3 never came") {
		t.Errorf("missing: %+v", missing)
	}
	// A shard of a plan without the fenced cell is another plan.
	other2 := &Matrix{Kind: Kind, Compare: true, Shard: "2/3", Planned: []CellKey{other, plain, {Scenario: "pause", Backend: "redis-token", Seed: 1, Version: "trixie", Fencing: "writes"}}}
	d := filepath.Join(t.TempDir(), "m")
	if err := Write(d, other2); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge([]string{s1, d}, t.TempDir()); err == nil {
		t.Errorf("shards of plans that differ in a cell's fencing merged")
	}
	if got := absentShards([]string{"1/4", "4/4"}); got != " (shards 2/4, 3/4 never came)" {
		t.Errorf("absentShards: %q", got)
	}
}
