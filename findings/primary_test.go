package findings

import "testing"

// TestPrimaryCells: a finding's primary cell is its own scenario on its
// backend, or its first Also for a file of its own; one whose cells show
// it only sometimes (Sometimes) has none, so a matrix whose cells all came
// out as claimed does not call it stale — while it still covers its cells.
func TestPrimaryCells(t *testing.T) {
	for _, tc := range []struct {
		id      string
		primary Cell
		has     bool
		covers  Cell
	}{
		{"etcd-22082", Cell{"retry-release", "etcd-concurrency"}, true, Cell{"retry-release", "etcd-concurrency"}},
		{"rueidislock-failover", Cell{"failover", "rueidislock"}, true, Cell{"failover", "rueidislock-1"}},
		{"rueidislock-restart", Cell{}, false, Cell{"restart", "rueidislock-1"}},
		{"redlock-restart", Cell{}, false, Cell{}},
	} {
		f, err := Lookup(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := f.Primary(); p != tc.primary || ok != tc.has {
			t.Errorf("%s: primary %v %v, want %v %v", tc.id, p, ok, tc.primary, tc.has)
		}
		if tc.has && PrimaryOf(tc.primary.Scenario, tc.primary.Backend) != tc.id {
			t.Errorf("%s: PrimaryOf(%v) = %q", tc.id, tc.primary, PrimaryOf(tc.primary.Scenario, tc.primary.Backend))
		}
		if tc.covers != (Cell{}) && Covering(tc.covers.Scenario, tc.covers.Backend) != tc.id {
			t.Errorf("%s: Covering(%v) = %q", tc.id, tc.covers, Covering(tc.covers.Scenario, tc.covers.Backend))
		}
	}
	if id := PrimaryOf("restart", "rueidislock-1"); id != "" {
		t.Errorf("restart on rueidislock-1 is %s's primary cell: it shows only under load", id)
	}
}
