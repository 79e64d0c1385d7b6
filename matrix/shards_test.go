package matrix

import (
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/scenarios"
)

// TestSharesMoreThanCells: more shares than cells gives each cell a share
// of its own and no more shares than cells (the rest are empty): the
// split never allocates a share per shard asked for, however many.
func TestSharesMoreThanCells(t *testing.T) {
	var cells []Planned
	for i, d := range []time.Duration{3, 1, 2} {
		sc := &scenarios.Scenario{Duration: scenarios.Duration(d * time.Second)}
		cells = append(cells, Planned{Key: CellKey{Scenario: "s", Backend: "b", Seed: int64(i + 1)}, Scenario: sc})
	}
	for _, n := range []int{3, 4, 1 << 20, 1 << 40} {
		got := Shares(cells, n)
		if len(got) > len(cells) {
			t.Fatalf("Shares(3 cells, %d): %d shares, want at most 3", n, len(got))
		}
		seen := 0
		for _, s := range got {
			if len(s) != 1 {
				t.Errorf("Shares(3 cells, %d): a share of %d cells, want 1 each", n, len(s))
			}
			seen += len(s)
		}
		if seen != len(cells) {
			t.Errorf("Shares(3 cells, %d) holds %d cells", n, seen)
		}
		if s := Share(cells, n, n); n > len(cells) && len(s) != 0 {
			t.Errorf("Share(3 cells, %d/%d) = %d cells, want none", n, n, len(s))
		}
	}
}

// TestParseShardBounds: a shard count past MaxShards is refused with
// one line naming the bound, before any plan is split.
func TestParseShardBounds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want string
	}{
		{"1/1000", true, ""},
		{"1000/1000", true, ""},
		{"1/1001", false, "at most 1000 shards"},
		{"1/99999999999", false, "at most 1000 shards"},
		{"99999999999/99999999999", false, "at most 1000 shards"},
		{"1/99999999999999999999999", false, "want i/n"},
	} {
		_, _, err := ParseShard(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseShard(%q): %v", tc.in, err)
			continue
		}
		if err != nil && (!strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")) {
			t.Errorf("ParseShard(%q): %q, want one line saying %q", tc.in, err, tc.want)
		}
	}
}

// TestPlanUserRowWithNoCell: a program of the user's as a row that no
// scenario asked for can take (its name unfit for the store) is a bad
// plan naming the row and why, never a row silently not run.
func TestPlanUserRowWithNoCell(t *testing.T) {
	name := strings.Repeat("a", 101)
	remove, err := backends.RegisterUserProgram(name, []string{"/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	_, _, err = Plan(PlanOptions{Scenarios: []string{"baseline", "pause"}, Backends: []string{"redis-token", name}, Fenced: true})
	if err == nil || !strings.Contains(err.Error(), "has no cell in the plan") || !strings.Contains(err.Error(), "101 characters") {
		t.Errorf("a user's row with no cell: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), name) {
		t.Errorf("the error quotes the whole 101-character name: %v", err)
	}
}
