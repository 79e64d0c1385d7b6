package matrix

import "testing"

// TestKnownFindingAtOtherVersion: a library row at another version
// (compare --library: ROW@V) is covered by ROW's findings, and a row
// whose name merely starts like a covered one is not.
func TestKnownFindingAtOtherVersion(t *testing.T) {
	for _, tc := range []struct {
		backend, want string
	}{
		{"rueidislock@v1.0.50", "rueidislock-renew-partition"},
		{"rueidislock-1@v1.0.50", "rueidislock-renew-partition"},
		{"rueidislock", "rueidislock-renew-partition"},
		{"redis-renew@v1.0.50", ""},
	} {
		c := Cell{CellKey: CellKey{Scenario: "renew-partition", Backend: tc.backend, Seed: 1}, Expected: "valid", Verdict: "invalid"}
		if got := knownFinding(c); got != tc.want {
			t.Errorf("%s: known finding %q, want %q", tc.backend, got, tc.want)
		}
	}
}
