package matrix

import (
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// TestEstimate: a cell's estimate is its parts one after another — its
// servers coming up (each server of an ensemble, a Redlock or a Sentinel
// group counted; its Startup, which decides whether they are started
// ahead, counts them too), its client processes' start (Python, Java, locktorture
// client), its run time, an eighth of its hold, the report and its
// servers' stop — so the failover-leader cells come before the pause
// cells, and a PostgreSQL cell before a Redis cell of the same family.
func TestEstimate(t *testing.T) {
	_, cells, err := Plan(PlanOptions{Scenarios: []string{"pause", "failover-leader"},
		Backends: []string{"redis-token", "redlock", "pg-advisory", "etcd", "redis-py", "curator", "zk-lock"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Planned{}
	for _, c := range cells {
		got[c.Key.Scenario+"/"+c.Key.Backend] = c
	}
	cost := func(kind string) time.Duration {
		k, ok := cluster.LookupKind(kind)
		if !ok {
			t.Fatalf("no kind %s", kind)
		}
		return k.StartupCost
	}
	for _, tc := range []struct {
		cell        string
		startup, up time.Duration
		program     string
		stop        time.Duration
	}{
		{"pause/redis-token", cost("redis"), serverStart["redis"], clientInProcess, serverStop},
		{"pause/redlock", 5 * cost("redis"), 5 * serverStart["redis"], clientInProcess, 5 * serverStop},
		{"pause/pg-advisory", cost("postgres"), serverStart["postgres"], clientInProcess, stopCost["postgres"]},
		{"pause/redis-py", cost("redis"), serverStart["redis"], clientPython, serverStop},
		{"pause/curator", cost("zookeeper"), serverStart["zookeeper"], clientJava, serverStop},
		{"pause/zk-lock", cost("zookeeper"), serverStart["zookeeper"], clientProcess, serverStop},
		{"failover-leader/etcd", 3 * cost("etcd"), 3 * serverStart["etcd"], clientInProcess, 3 * serverStop},
	} {
		t.Run(tc.cell, func(t *testing.T) {
			c, ok := got[tc.cell]
			if !ok {
				t.Fatalf("not planned")
			}
			if c.Startup() != tc.startup {
				t.Errorf("start-up %v, want %v", c.Startup(), tc.startup)
			}
			if p := c.ClientProgram(); p != tc.program {
				t.Errorf("client program %s, want %s", p, tc.program)
			}
			k := c.Cost()
			want := Cost{Before: cellSetup + tc.up + clientStart[tc.program], Run: c.Scenario.Duration.D(),
				Settle: c.Scenario.Hold.D() / 8, After: cellReport + tc.stop}
			if k != want {
				t.Errorf("cost %+v, want %+v", k, want)
			}
			if c.Estimate() != want.Total() {
				t.Errorf("estimate %v, want %v", c.Estimate(), want.Total())
			}
		})
	}
	if e := got["failover-leader/etcd"].Estimate(); e <= got["pause/etcd"].Estimate() {
		t.Errorf("failover-leader/etcd %v is no longer than pause/etcd %v", e, got["pause/etcd"].Estimate())
	}
	if got["pause/pg-advisory"].Estimate() <= got["pause/redis-token"].Estimate() {
		t.Errorf("pause/pg-advisory %v is no longer than pause/redis-token %v", got["pause/pg-advisory"].Estimate(), got["pause/redis-token"].Estimate())
	}
}

// TestMakespan: the makespan of a small table of cells, worked out by
// hand, on lanes that wait for a cell's end, on lanes that start the next
// cell once the clients stopped, with a cell's servers started ahead,
// and with a long wind-down that its lane's cell after next waits for.
func TestMakespan(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name    string
		costs   []Cost
		lanes   int
		overlap bool
		want    time.Duration
	}{
		{"one lane is the sum", []Cost{{Before: s, Run: 3 * s, Settle: s, After: s}, {Before: s, Run: 2 * s, After: s}}, 1, false, 10 * s},
		// Lane 0: A [0,10]. Lane 1: B [0,6], then C [6,11].
		{"two lanes, each cell to the lane free first", []Cost{
			{Before: s, Run: 7 * s, Settle: s, After: s},
			{Before: s, Run: 3 * s, Settle: s, After: s},
			{Before: s, Run: 2 * s, Settle: s, After: s},
		}, 2, false, 11 * s},
		// Lane 0: A's clients stop at 9, it ends at 10. Lane 1: B's stop
		// at 5 (ends 6), C starts at 5, its clients stop at 9, it ends at 10.
		{"two lanes overlapping", []Cost{
			{Before: s, Run: 7 * s, Settle: s, After: s},
			{Before: s, Run: 3 * s, Settle: s, After: s},
			{Before: s, Run: 2 * s, Settle: s, After: s},
		}, 2, true, 10 * s},
		// X: time up at 7, clients stop at 8, ends 9. Y's servers start
		// at 7 and are up at 8.5; its clients start at 9 (the half second
		// of its Before left), time up 14, stop 15, end 16.
		{"servers started ahead", []Cost{
			{Before: 2 * s, Run: 5 * s, Settle: s, After: s},
			{Before: 2 * s, Run: 5 * s, Settle: s, After: s, Ahead: 1500 * time.Millisecond},
		}, 1, true, 16 * s},
		// Without it started ahead: Y starts at 8, ends 17.
		{"servers not started ahead", []Cost{
			{Before: 2 * s, Run: 5 * s, Settle: s, After: s},
			{Before: 2 * s, Run: 5 * s, Settle: s, After: s},
		}, 1, true, 17 * s},
		// X's clients stop at 1, it ends at 6; Y runs [1,2]; Z waits for
		// X's end (one cell of a lane winds down at a time): [6,7].
		{"one cell of a lane winds down at a time", []Cost{
			{Run: s, After: 5 * s},
			{Run: s},
			{Run: s},
		}, 1, true, 7 * s},
		{"no cells", nil, 4, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Makespan(tc.costs, tc.lanes, tc.overlap); got != tc.want {
				t.Errorf("Makespan = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWall: one at a time a plan takes the sum of its estimates; side by
// side, the makespan of its cells longest first, with the slow servers
// started ahead when prestart is on; more lanes never take longer.
func TestWall(t *testing.T) {
	_, cells, err := Plan(PlanOptions{Scenarios: []string{"pause", "restart"}, Backends: []string{"redis-token", "pg-advisory", "zookeeper", "etcd"}, Seeds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := Wall(cells, 1, false); got != Total(cells) {
		t.Errorf("one at a time: %v, want the sum %v", got, Total(cells))
	}
	var costs, ahead []Cost
	for _, i := range LongestFirst(cells) {
		costs = append(costs, cells[i].Cost())
		k := cells[i].Cost()
		if cells[i].StartsAhead() {
			k.Ahead = cells[i].serversUp()
		}
		ahead = append(ahead, k)
	}
	if got, want := Wall(cells, 3, false), Makespan(costs, 3, true); got != want {
		t.Errorf("3 lanes: %v, want %v", got, want)
	}
	if got, want := Wall(cells, 3, true), Makespan(ahead, 3, true); got != want || got >= Wall(cells, 3, false) {
		t.Errorf("3 lanes, prestart: %v, want %v, less than without", got, want)
	}
	order := LongestFirst(cells)
	for j := 1; j < len(order); j++ {
		if cells[order[j]].Estimate() > cells[order[j-1]].Estimate() {
			t.Errorf("LongestFirst: %s (%v) after %s (%v)", cells[order[j]].Key, cells[order[j]].Estimate(), cells[order[j-1]].Key, cells[order[j-1]].Estimate())
		}
	}
}
