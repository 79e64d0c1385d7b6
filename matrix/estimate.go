package matrix

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
)

// A cell's time, as the estimate sees it, is four parts one after
// another on its lane (Cost). The parts' sizes were measured in run.log
// on the 2-core machine (docs/compare.md, "How long a comparison
// takes"): they decide the order cells run in, the shards' split and the
// plan's estimate, never a verdict.
const (
	// cellSetup is a cell's own start beside its servers': its store,
	// the sweep for what dead harnesses left, the backend's and the
	// resource's connections, the servers' versions.
	cellSetup = 100 * time.Millisecond
	// cellReport is what a cell does once its clients stopped, beside
	// stopping its servers: the final reads, the check, the report drawn
	// (its plots), results.json written, the recovery measured.
	cellReport = 300 * time.Millisecond
	// serverStop is how long a server takes to stop, but for the kinds
	// in stopCost.
	serverStop = 60 * time.Millisecond
)

// serverStart is how long a server of a kind takes to come up on the
// idle 2-core machine (docs/compare.md: a PostgreSQL's data directory
// copied and started, a ZooKeeper JVM, a MariaDB; Redis and etcd in a
// fraction of that); a kind not listed takes its cluster.Kind.StartupCost.
var serverStart = map[string]time.Duration{"redis": 30 * time.Millisecond, "etcd": 150 * time.Millisecond, "postgres": 500 * time.Millisecond,
	"zookeeper": 900 * time.Millisecond, "mariadb": 300 * time.Millisecond}

// stopCost is how long a server of the kinds slow to stop takes (a
// PostgreSQL shuts down cleanly, a MariaDB too).
var stopCost = map[string]time.Duration{"postgres": 600 * time.Millisecond, "mariadb": 300 * time.Millisecond}

// clientStart is how long a cell's client processes take to open (they
// open side by side): Python with its library imported, a JVM with
// Curator, a locktorture client process; in-process clients take none.
var clientStart = map[string]time.Duration{clientPython: 500 * time.Millisecond, clientJava: 2 * time.Second, clientProcess: 300 * time.Millisecond}

// The kinds of client program a cell runs (ClientProgram).
const (
	clientInProcess = "in-process"
	clientProcess   = "process"
	clientPython    = "python"
	clientJava      = "java"
)

// Cost is a cell's time on its lane, in the estimate's four parts.
type Cost struct {
	// Before is from the cell's start to its clients' start: its servers'
	// start-up (Startup), its own set-up and its client processes' start.
	Before time.Duration
	// Run is its clients' time (the scenario's duration).
	Run time.Duration
	// Settle is from the clients' time up to their stop: the critical
	// sections under way finish (an eighth of the hold, on average: most
	// clients are between two when the time is up) and the faults heal.
	Settle time.Duration
	// After is from the clients' stop to the cell's end: the final reads,
	// the check, the report, its servers stopped. Cells side by side run
	// it beside their lane's next cell.
	After time.Duration
	// Ahead is the part of Before a lane does ahead, from the clients'
	// time up of the cell before (its servers coming up, when slow to:
	// StartsAhead, with --prestart); zero for none.
	Ahead time.Duration
}

// Total is the whole cell, one part after another.
func (k Cost) Total() time.Duration { return k.Before + k.Run + k.Settle + k.After }

// Cost is the cell's time in the estimate's parts.
func (c Planned) Cost() Cost {
	k := Cost{Before: cellSetup + c.serversUp() + clientStart[c.ClientProgram()], Run: c.Scenario.Duration.D(), Settle: c.Scenario.Hold.D() / 8, After: cellReport}
	for _, kind := range c.Kinds {
		stop, ok := stopCost[kind]
		if !ok {
			stop = serverStop
		}
		k.After += stop * time.Duration(c.servers(kind))
	}
	return k
}

// serversUp is how long the cell's servers take to come up (serverStart
// for each of them).
func (c Planned) serversUp() time.Duration {
	var d time.Duration
	for _, k := range c.Kinds {
		up, ok := serverStart[k]
		if !ok {
			if kind, found := cluster.LookupKind(k); found {
				up = kind.StartupCost
			}
		}
		d += up * time.Duration(c.servers(k))
	}
	return d
}

// ClientProgram is the kind of client the cell runs: in-process (the
// harness's own goroutines), process (locktorture client processes), or
// the program row's language (python, java; a program of the user's is a
// process).
func (c Planned) ClientProgram() string {
	if !c.Scenario.ProcessClients() {
		return clientInProcess
	}
	prog, ok := backends.ProgramOf(c.Key.Backend)
	if !ok || len(prog.Command) == 0 {
		return clientProcess
	}
	cmd := strings.Join(prog.Command, " ")
	switch {
	case strings.Contains(filepath.Base(prog.Command[0]), "python") || strings.Contains(cmd, ".py"):
		return clientPython
	case strings.Contains(cmd, "java") || strings.Contains(cmd, ".jar"):
		return clientJava
	}
	return clientProcess
}

// servers is how many servers of kind the cell starts: its ensemble's
// members (etcd: {members: 3}), the five of a Redlock, or a Sentinel
// group's primary, replica and three Sentinels; else one.
func (c Planned) servers(kind string) int {
	if o, ok := c.Scenario.Kinds[kind].(cluster.EnsembleOptions); ok && o.Size() > 1 {
		return o.Size()
	}
	if kind == "redis" && c.Scenario.Redis == backends.RedisSentinel {
		return 5
	}
	if info, _, err := backends.Lookup(c.Key.Backend); err == nil && info.Counts[kind] > 1 {
		return info.Counts[kind]
	}
	return 1
}

// LongestFirst is the order cells side by side are started in: the
// longest estimate first (the plan's order among equals), so that lanes
// end together rather than one long cell running alone at the end.
func LongestFirst(cells []Planned) []int {
	order := make([]int, len(cells))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(cells[b].Estimate(), cells[a].Estimate())
	})
	return order
}

// Makespan is how long costs take on lanes side by side, as a matrix
// deals them (a list scheduling): in order, each cell to the lane free
// first (the first of equals). With overlap a lane starts its next cell
// once its cell's clients stopped (Before+Run+Settle), while that cell's
// After goes on, and no sooner than the cell before it ended (one cell of
// a lane winds down at a time); without, once it ended. A cell's Ahead
// starts on its lane when the clients' time of the cell before is up
// (none for a lane's first cell), and the rest of its Before once it is
// done and the lane is free. The makespan is when the last cell ends.
func Makespan(costs []Cost, lanes int, overlap bool) time.Duration {
	lanes = max(lanes, 1)
	free := make([]time.Duration, lanes)   // when each lane may start its next cell
	ended := make([]time.Duration, lanes)  // when each lane's last cell ends
	timeUp := make([]time.Duration, lanes) // when its last cell's clients' time was up
	used := make([]bool, lanes)
	var end time.Duration
	for _, k := range costs {
		l := 0
		for j := range free {
			if free[j] < free[l] {
				l = j
			}
		}
		start := free[l]
		if used[l] && k.Ahead > 0 {
			start = max(start, timeUp[l]+k.Ahead) - k.Ahead
		}
		timeUp[l] = start + k.Before + k.Run
		stopped := timeUp[l] + k.Settle
		done := stopped + k.After
		if overlap {
			free[l] = max(stopped, ended[l])
		} else {
			free[l] = done
		}
		ended[l], used[l] = done, true
		end = max(end, done)
	}
	return end
}

// Wall is about how long the cells take at parallel lanes, as a matrix
// runs them: one at a time, the sum of their estimates (less the slow
// servers started ahead, with prestart); side by side, the longest first
// on lanes that overlap (Makespan).
func Wall(cells []Planned, parallel int, prestart bool) time.Duration {
	order := make([]int, len(cells))
	for i := range order {
		order[i] = i
	}
	if parallel > 1 {
		order = LongestFirst(cells)
	}
	costs := make([]Cost, 0, len(cells))
	for _, i := range order {
		k := cells[i].Cost()
		if prestart && cells[i].StartsAhead() {
			k.Ahead = cells[i].serversUp()
		}
		costs = append(costs, k)
	}
	return Makespan(costs, parallel, parallel > 1)
}

// PrestartMin is the estimated start-up (Startup) from which a matrix
// lane starts a cell's servers ahead, while the cell before it winds
// down: PostgreSQL, ZooKeeper and MariaDB, whose start-up (a data
// directory copied, a JVM: 0.3-1.3 s on an idle 2-core machine) is worth
// taking off a lane's time; Redis (25 ms) and etcd (0.1-0.2 s) come up in
// a fraction of that, and are started when their cell's turn comes.
var PrestartMin = time.Second

// StartsAhead says whether a lane starts the cell's servers ahead (with
// --prestart): their estimated start-up is at least PrestartMin and they
// are the cell's own (an external cell's belong to someone else, and the
// cells share them).
func (c Planned) StartsAhead() bool {
	return c.Startup() >= PrestartMin && c.Scenario.Servers != cluster.ServersExternal
}
