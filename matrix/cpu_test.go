package matrix

import (
	"testing"
	"time"
)

// TestCPU: a cell's CPU is the harness's part, each of its servers (a
// Redlock's five, an etcd ensemble's three) and each of its client
// processes (two Pythons, two Curator JVMs; tooz's heavier imports).
func TestCPU(t *testing.T) {
	_, cells, err := Plan(PlanOptions{Scenarios: []string{"pause", "failover-leader"},
		Backends: []string{"redis-token", "redlock", "etcd", "redis-py", "tooz-redis", "curator", "zk-lock"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Planned{}
	for _, c := range cells {
		got[c.Key.Scenario+"/"+c.Key.Backend] = c
	}
	for _, tc := range []struct {
		cell string
		want time.Duration
	}{
		{"pause/redis-token", harnessCPU + serverCPU["redis"]},
		{"pause/redlock", harnessCPU + 5*serverCPU["redis"]},
		{"failover-leader/etcd", harnessCPU + 3*serverCPU["etcd"]},
		{"pause/redis-py", harnessCPU + serverCPU["redis"] + 2*clientCPU[clientPython]},
		{"pause/tooz-redis", harnessCPU + serverCPU["redis"] + 2*450*time.Millisecond},
		{"pause/curator", harnessCPU + serverCPU["zookeeper"] + 2*clientCPU[clientJava]},
		{"pause/zk-lock", harnessCPU + serverCPU["zookeeper"] + 2*clientCPU[clientProcess]},
	} {
		c, ok := got[tc.cell]
		if !ok {
			t.Fatalf("%s: not planned", tc.cell)
		}
		if g := c.CPU(); g != tc.want {
			t.Errorf("%s: CPU %v, want %v", tc.cell, g, tc.want)
		}
	}
}

// TestAutoLanes: --parallel auto gives light cells (in-process clients
// over one Redis) more lanes than heavy ones (a ZooKeeper JVM and two
// Curator JVMs a cell, or two Pythons), within its bounds, and never more lanes than
// cells; each choice keeps the cells' CPU within the budget, and one lane
// more would not.
func TestAutoLanes(t *testing.T) {
	plan := func(backends ...string) []Planned {
		_, cells, err := Plan(PlanOptions{Scenarios: []string{"pause", "delay", "partition"}, Backends: backends, Seeds: 3})
		if err != nil {
			t.Fatal(err)
		}
		return cells
	}
	light, heavy := plan("redis-token", "redislock", "rueidislock"), plan("curator", "kazoo")
	for _, tc := range []struct {
		name   string
		cells  []Planned
		cores  int
		lo, hi int
		want   int // 0: any within the budget, checked below
	}{
		{"light cells get the most", light, 2, 4, 8, 8},
		{"heavy cells get fewer", heavy, 2, 4, 8, 0},
		{"never more lanes than cells", light[:5], 2, 4, 8, 5},
		{"a bound of one lane more", light, 2, 4, 5, 5},
		{"more cores, more lanes", heavy, 8, 16, 32, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := AutoLanes(tc.cells, tc.cores, tc.lo, tc.hi, false)
			if tc.want != 0 && got != tc.want {
				t.Errorf("%d lanes, want %d", got, tc.want)
			}
			if got < tc.lo || got > tc.hi {
				t.Errorf("%d lanes, outside %d to %d", got, tc.lo, tc.hi)
			}
			var cpu time.Duration
			for _, c := range tc.cells {
				cpu += c.CPU()
			}
			busy := func(lanes int) float64 {
				return cpu.Seconds() / Wall(tc.cells, lanes, false).Seconds() / float64(tc.cores)
			}
			if got > tc.lo && busy(got) > CPUBudget {
				t.Errorf("%d lanes keep the cores %.0f%% busy, over the budget", got, 100*busy(got))
			}
			if tc.name == "heavy cells get fewer" && got >= AutoLanes(light, tc.cores, tc.lo, tc.hi, false) {
				t.Errorf("heavy cells %d lanes, no fewer than light cells", got)
			}
			if got < tc.hi && got < len(tc.cells) && busy(got+1) <= CPUBudget {
				t.Errorf("%d lanes, but %d would keep the cores within the budget (%.0f%%)", got, got+1, 100*busy(got+1))
			}
		})
	}
}

// TestWallOnCores: cells whose processes keep the cores little busy take
// their lanes' model's time; busier, they take Contention longer for each
// share of the cores past contentionFree; more cores, less stretch.
func TestWallOnCores(t *testing.T) {
	_, cells, err := Plan(PlanOptions{Scenarios: []string{"pause", "delay"}, Backends: []string{"redis-token", "curator", "kazoo"}, Seeds: 3})
	if err != nil {
		t.Fatal(err)
	}
	var cpu time.Duration
	for _, c := range cells {
		cpu += c.CPU()
	}
	for _, lanes := range []int{1, 2, 4, 8} {
		wall := Wall(cells, lanes, false)
		for _, cores := range []int{1, 2, 64} {
			busy := cpu.Seconds() / wall.Seconds() / float64(cores)
			got := WallOnCores(cells, lanes, cores, false)
			switch {
			case busy <= contentionFree && got != wall:
				t.Errorf("%d lanes on %d cores (%.0f%% busy): %v, want the model's %v", lanes, cores, 100*busy, got, wall)
			case busy > contentionFree:
				want := time.Duration(float64(wall) * (1 + Contention*(busy-contentionFree)))
				if got != want || got <= wall {
					t.Errorf("%d lanes on %d cores (%.0f%% busy): %v, want %v (the model's %v stretched)", lanes, cores, 100*busy, got, want, wall)
				}
			}
		}
		if WallOnCores(cells, lanes, 1, false) < WallOnCores(cells, lanes, 2, false) {
			t.Errorf("%d lanes: one core faster than two", lanes)
		}
	}
}
