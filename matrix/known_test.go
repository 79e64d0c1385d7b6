package matrix

import (
	"slices"
	"testing"
)

// TestKnownFindings: a cell whose invalid run contradicts its row's claim
// (expected valid) names the finding that covers its scenario and backend
// and keeps the matrix valid (nothing new); a contradiction no finding
// covers makes it invalid; a cell expected invalid, an error or an
// unknown run names none; a finding whose covered cells all came out as
// claimed is stale.
func TestKnownFindings(t *testing.T) {
	cell := func(sc, b, expected, verdict string) Cell {
		return Cell{CellKey: CellKey{Scenario: sc, Backend: b, Seed: 1}, Expected: expected, Verdict: verdict, AsExpected: expected == verdict}
	}
	for _, tc := range []struct {
		name  string
		cells []Cell
		known []string // each cell's KnownFinding
		valid bool
		stale []string
	}{
		{"covered contradiction", []Cell{cell("renew-partition", "rueidislock", "valid", "invalid"), cell("baseline", "rueidislock", "valid", "valid")},
			[]string{"rueidislock-renew-partition", ""}, true, nil},
		{"covered by Also", []Cell{cell("failover", "rueidislock-1", "valid", "invalid"), cell("renew-delay", "zk-lock", "valid", "invalid")},
			[]string{"rueidislock-failover", "zk-lock-renew-partition"}, true, nil},
		{"new contradiction", []Cell{cell("renew-partition", "rueidislock", "valid", "invalid"), cell("pause", "redis-renew", "valid", "invalid")},
			[]string{"rueidislock-renew-partition", ""}, false, nil},
		{"unknown run is not the finding", []Cell{cell("renew-partition", "rueidislock", "valid", "unknown")},
			[]string{""}, false, nil},
		{"error is not the finding", []Cell{cell("renew-partition", "rueidislock", "valid", VerdictError)},
			[]string{""}, false, nil},
		{"finding the claim concedes covers nothing", []Cell{cell("failover", "redis-token", "valid", "invalid")},
			[]string{""}, false, nil},
		{"claim held: stale finding", []Cell{cell("renew-partition", "rueidislock", "valid", "valid"), cell("renew-partition", "rueidislock-1", "valid", "valid")},
			[]string{"", ""}, true, []string{"rueidislock-renew-partition"}},
		{"a secondary cell alone never makes it stale", []Cell{cell("zk-partition", "zk-lock", "valid", "valid")},
			[]string{""}, true, nil},
		{"claim held once of two: not stale", []Cell{cell("renew-partition", "rueidislock", "valid", "valid"), cell("renew-partition", "rueidislock-1", "valid", "invalid")},
			[]string{"", "rueidislock-renew-partition"}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Matrix{Cells: slices.Clone(tc.cells)}
			for _, c := range m.Cells {
				m.Planned = append(m.Planned, c.CellKey)
			}
			m.Finish()
			for i, c := range m.Cells {
				if c.KnownFinding != tc.known[i] {
					t.Errorf("%s: known finding %q, want %q", c.CellKey, c.KnownFinding, tc.known[i])
				}
			}
			if m.Valid != tc.valid {
				t.Errorf("valid %v, want %v", m.Valid, tc.valid)
			}
			if got := m.Stale(); !slices.Equal(got, tc.stale) {
				t.Errorf("stale %v, want %v", got, tc.stale)
			}
		})
	}
}
