package matrix

import (
	"strings"
	"time"
)

// A cell's CPU, as the estimate sees it: what its processes (the
// harness's part, its servers, its client programs) spend in all, in
// CPU-seconds. Measured on one pause cell of each kind of row on the
// 2-core machine on 2026-11-29 (docs/compare.md, "How long a comparison
// takes"); it decides how many lanes --parallel auto runs (AutoLanes),
// never a verdict.
const (
	// harnessCPU is the harness's own part of a cell: its clients'
	// goroutines, the check, the report's plots, results.json, the
	// history (0.15-0.3 CPU-s measured), and the kernel's part in its
	// processes' starts and stops: with it, the model gives the 87 cells
	// of the pause and delay families about the 92-104 CPU-s measured
	// for them (load 5-11).
	harnessCPU = 400 * time.Millisecond
)

// serverCPU is what one server of a kind spends in a cell, its start
// included: a ZooKeeper JVM most (0.6-0.9 CPU-s), an etcd member 0.3, a
// MariaDB 0.16, a PostgreSQL 0.3 (its data directory copied by the
// harness: 0.1-0.4 CPU-s in the kernel, the server 0.05), a Redis 0.03.
var serverCPU = map[string]time.Duration{"redis": 30 * time.Millisecond, "etcd": 300 * time.Millisecond,
	"postgres": 300 * time.Millisecond, "zookeeper": 700 * time.Millisecond, "mariadb": 160 * time.Millisecond,
	"pgbouncer": 50 * time.Millisecond}

// defaultServerCPU is a server of a kind not in serverCPU.
const defaultServerCPU = 300 * time.Millisecond

// clientCPU is what one client process of a kind spends in a cell: a
// Python interpreter with its library imported 0.2 (tooz's imports bring
// more: 0.45), a Curator JVM 0.7, a locktorture client process 0.025.
var clientCPU = map[string]time.Duration{clientPython: 200 * time.Millisecond, clientJava: 700 * time.Millisecond, clientProcess: 25 * time.Millisecond}

// CPU is about what the cell's processes spend in all: the harness's
// part, each of its servers, each of its client processes.
func (c Planned) CPU() time.Duration {
	d := harnessCPU
	for _, k := range c.Kinds {
		per, ok := serverCPU[k]
		if !ok {
			per = defaultServerCPU
		}
		d += per * time.Duration(c.servers(k))
	}
	if prog := c.ClientProgram(); prog != clientInProcess {
		per := clientCPU[prog]
		if prog == clientPython && strings.HasPrefix(c.Key.Backend, "tooz-") {
			per = 450 * time.Millisecond
		}
		d += per * time.Duration(max(c.Scenario.Clients, 1))
	}
	return d
}

// totalCPU is the cells' CPU, summed.
func totalCPU(cells []Planned) time.Duration {
	var cpu time.Duration
	for _, c := range cells {
		cpu += c.CPU()
	}
	return cpu
}

// CPUBudget is the share of the cores --parallel auto lets the cells'
// processes keep busy on average, by the lanes' model (AutoLanes): the rest is the headroom
// for their bursts (JVMs and Pythons starting together), so that a cell's
// timers, not the CPU, set its pace.
const CPUBudget = 0.8

// AutoLanes is how many lanes --parallel auto runs cells in on cores:
// from lo (two a core: a cell mostly waits) up to hi, the most lanes
// whose cells' CPU (the sum of their CPU) over their time side by side
// (Wall) stays within CPUBudget of the cores. Light cells (in-process
// clients over Redis) get more lanes than JVMs and Pythons do.
func AutoLanes(cells []Planned, cores, lo, hi int, prestart bool) int {
	cpu := totalCPU(cells)
	best := lo
	for lanes := lo + 1; lanes <= hi && lanes <= len(cells); lanes++ {
		wall := Wall(cells, lanes, prestart)
		if wall <= 0 || cpu.Seconds()/wall.Seconds() > CPUBudget*float64(cores) {
			break
		}
		best = lanes
	}
	return best
}

// Contention is how much longer the cells take side by side than their
// lanes' model (Wall) says, for each share of the cores their processes
// keep busy past contentionFree: the cells' processes then wait for a
// core as well as for their timers. Fitted on the whole comparison of
// 2026-11-29 on the idle 2-core machine: at 4 lanes (the model's CPU 40%
// of the cores) it took the model's time (844 s measured), at 6 (64%)
// 14% more (604 s measured, 530 s modelled).
const (
	contentionFree = 0.40
	Contention     = 0.58
)

// WallOnCores is Wall stretched by the cells' contention for cores: what
// the plan says the cells take at parallel lanes on this many cores.
func WallOnCores(cells []Planned, parallel, cores int, prestart bool) time.Duration {
	wall := Wall(cells, parallel, prestart)
	if wall <= 0 || cores < 1 {
		return wall
	}
	cpu := totalCPU(cells)
	busy := cpu.Seconds() / wall.Seconds() / float64(cores)
	return time.Duration(float64(wall) * (1 + Contention*max(0, busy-contentionFree)))
}
