package matrix

import (
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/scenarios"
)

// TestEstimate: a cell's estimate is its run time, one more critical
// section and its servers' start-up, so the compare plan's failover cells
// come first and a PostgreSQL cell before a Redis cell of the same family.
func TestEstimate(t *testing.T) {
	m, cells, err := Plan(PlanOptions{Scenarios: []string{"pause", "failover"}, Backends: []string{"redis-token", "pg-advisory", "mysql-get-lock"}})
	if err != nil {
		t.Fatal(err)
	}
	est := map[string]time.Duration{}
	for _, c := range cells {
		est[c.Key.Scenario+"/"+c.Key.Backend] = c.Estimate()
	}
	// Each family's own run time and critical section, as its file says
	// (the files' timings change; the sum must follow them).
	own := func(name string) time.Duration {
		sc, err := scenarios.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		return sc.Duration.D() + sc.Hold.D()
	}
	for _, tc := range []struct {
		cell string
		want time.Duration
	}{
		{"pause/redis-token", own("pause") + 100*time.Millisecond},
		{"pause/pg-advisory", own("pause") + 2*time.Second},
		{"pause/mysql-get-lock", own("pause") + time.Second},
		{"failover/redis-token", own("failover") + 100*time.Millisecond},
	} {
		if got, ok := est[tc.cell]; !ok || got != tc.want {
			t.Errorf("%s: estimate %v (planned %v), want %v (plan %v)", tc.cell, got, ok, tc.want, m.Planned)
		}
	}
	if est["failover/redis-token"] <= est["pause/pg-advisory"] || est["pause/pg-advisory"] <= est["pause/redis-token"] {
		t.Errorf("estimates out of order: %v", est)
	}
}

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
