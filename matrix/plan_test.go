package matrix

import (
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/scenarios"
)

// TestPlanDurations: a plan's own run time for a scenario (compare's
// baseline) reaches its cells and their repeat commands, and only its;
// a --duration for every cell wins over it.
func TestPlanDurations(t *testing.T) {
	three := 3 * time.Second
	for _, tc := range []struct {
		name      string
		overrides scenarios.Overrides
		want      time.Duration
	}{
		{"plan's own", scenarios.Overrides{}, three},
		{"--duration wins", scenarios.Overrides{Duration: ptrTo(4 * time.Second)}, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cells, err := Plan(PlanOptions{Scenarios: []string{"baseline", "pause"}, Backends: []string{"redis-token"},
				Overrides: tc.overrides, Durations: map[string]time.Duration{"baseline": three}})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cells {
				own := c.Key.Scenario == "baseline" && tc.overrides.Duration == nil
				if c.Key.Scenario == "baseline" && c.Scenario.Duration.D() != tc.want {
					t.Errorf("baseline runs %v, want %v", c.Scenario.Duration.D(), tc.want)
				}
				if got := strings.Contains(c.Command(nil), "--duration 3s"); got != own {
					t.Errorf("%s: repeat command %q: --duration 3s there is %v, want %v", c.Key.Scenario, c.Command(nil), got, own)
				}
				if c.Key.Scenario == "pause" && c.Scenario.Duration.D() == three && tc.overrides.Duration == nil {
					t.Errorf("pause took the baseline's run time")
				}
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestShareByEstimate: shards are dealt by each cell's estimated time,
// not by count: three long cells among short ones go to three shards,
// every cell lands in exactly one shard, a shard keeps the plan's order,
// and the shards' estimates end within 15% of each other.
func TestShareByEstimate(t *testing.T) {
	var cells []Planned
	for i, d := range []time.Duration{10, 1, 1, 10, 1, 1, 10, 1, 1} {
		sc := &scenarios.Scenario{Duration: scenarios.Duration(d * time.Second)}
		cells = append(cells, Planned{Key: CellKey{Scenario: "s", Backend: "b", Seed: int64(i + 1)}, Scenario: sc})
	}
	seen := map[CellKey]int{}
	var ests []time.Duration
	for i := 1; i <= 3; i++ {
		share := Share(cells, i, 3)
		for j, c := range share {
			seen[c.Key]++
			if j > 0 && share[j-1].Key.Seed > c.Key.Seed {
				t.Errorf("shard %d/3 is out of plan order: %v", i, share)
			}
		}
		ests = append(ests, Total(share))
	}
	if len(seen) != len(cells) {
		t.Errorf("the shards hold %d of %d cells", len(seen), len(cells))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s is in %d shards", k, n)
		}
	}
	if s := Spread(ests); s > 0.15 {
		t.Errorf("shards' estimates %v differ by %.0f%%, want at most 15%%", ests, s*100)
	}
	if got := Shares(cells, 3); len(got) != 3 || Total(got[0])+Total(got[1])+Total(got[2]) != Total(cells) {
		t.Errorf("Shares: %v", got)
	}
	if got := Share(cells, 1, 1); len(got) != len(cells) {
		t.Errorf("one shard of one: %d cells", len(got))
	}
}

// TestSpread: the spread of shards' estimates is the largest less the
// smallest, over the largest.
func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		in   []time.Duration
		want float64
	}{{nil, 0}, {[]time.Duration{5}, 0}, {[]time.Duration{10, 9, 8}, 0.2}, {[]time.Duration{0, 0}, 0}} {
		if got := Spread(tc.in); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("Spread(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
