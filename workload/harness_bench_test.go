package workload_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/leakcheck"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/workload"
)

// The harness benchmark's shape: the run (redis-token, 8 clients,
// 8 keys, hold and think 1ns), in interleaved rounds: many short ones, so
// that the machine's drift (a shared, loaded one) falls on every side alike.
const (
	harnessClients = 8
	harnessKeys    = 8
	harnessRounds  = 32
	harnessRound   = 250 * time.Millisecond
)

// BenchmarkHarness measures what the harness costs a lock: on one
// redis-server it runs, in alternating rounds of harnessRound each,
//
//   - bare: 8 goroutines, each looping acquire and release of a key of
//     its own through the redis-token backend's Client (as BenchmarkCycles
//     in backends does), counting cycles (both calls succeeded);
//
//   - bare-keys: the bare loop with the workload's contention — each of
//     8 goroutines picks one of the 8 keys at random, acquires it and, if
//     it got it, releases it — counting holds (acquires that got the lock)
//     and busy acquires;
//
//   - harness: workload.Run with the same backend, 8 clients on 8 keys,
//     hold and think 1ns, the memory resource, recording as the runner
//     does: a history Recorder streaming to a file (nothing kept in
//     memory), every op told to the run's live counts (reports.Live) and
//     to a nemesis engine (with no steps), counting holds (acquire ok).
//     Each hold is acquire, read, write, release: 8 history ops and 4
//     requests, 2 of them to Redis; an acquire that finds the key busy
//     (another client holds it) is 2 ops and one request, and no hold.
//     As in a run, the lock clients are made and connected (Procs.Open)
//     before the round's clock starts: a run's time starts once they are;
//     and the run's context can be cancelled, every request's timeout
//     hanging from it.
//
// Each side is counted over its round's window, to the end of the round
// (what completes after it is not counted) from its start: for the bare
// loops, whose goroutines all start at once, the round's start; for the
// harness, the moment its last client made its first request (the
// clients enter one after another, as a run's do). So a side's start and
// end, which take a round trip or a few, weigh on none of them, however
// short the rounds.
//
// The like-for-like ratio is harness/bare-same-keys: holds/s through the
// harness over holds/s of the bare-keys loop, over the sums of all
// rounds; round-ratio is the median of the same ratio round by round
// (each harness round over the bare-keys round beside it; the two take
// turns going first), which a round stalled by the machine moves less.
// What is left between them is the harness's own cost: busy-bare and
// busy-harness (the share of acquires that found the key taken) say
// whether it held keys longer.
//
// It also reports cycles/s, holds/s, lock-reqs/s (the harness's acquires
// and releases, busy ones included), harness/bare: holds/s over the own
// keys loop's cycles/s (a busy acquire is no hold, so this cannot reach 1
// even with a free harness), and reqs-ratio: lock-reqs/s to the own-keys
// loop's requests per second (2 a cycle). Run it as
//
//	go test -run '^$' -bench Harness -benchtime 1x ./workload/
//
// It is skipped when redis-server is not installed (fails under CI=true).
func BenchmarkHarness(b *testing.B) {
	testenv.Require(b, "redis-server")
	tmp := b.TempDir()
	cl, err := cluster.New(cluster.Options{TempDir: tmp})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := cl.Close(); err != nil {
			b.Error(err)
		}
		if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
			b.Errorf("servers left running: %v", left)
		}
	}()
	_, factory, err := backends.Lookup("redis-token")
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, harnessKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	ctx := context.Background()
	timeout := 2 * time.Second
	backend, err := factory(ctx, backends.Env{Cluster: cl, TTL: 10 * time.Second, OpTimeout: timeout,
		Clients: harnessClients, Keys: keys, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer backend.Close()
	bare, err := newBareClients(ctx, backend)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, c := range bare {
			_ = c.Close()
		}
	}()
	cfg := workload.Config{Clients: harnessClients, Keys: keys, Hold: time.Nanosecond,
		ThinkMin: time.Nanosecond, ThinkMax: time.Nanosecond, OpTimeout: timeout, Seed: 1}

	var bare1, bareKeys, harness sideCounts
	var rounds []float64 // harness over bare-keys, round by round
	b.ResetTimer()
	for range b.N {
		for r := range harnessRounds {
			// The labels split a -cpuprofile: pprof -tagfocus side=harness.
			var c sideCounts
			pprof.Do(ctx, pprof.Labels("side", "bare"), func(context.Context) {
				c, err = bareRound(bare, timeout, harnessRound)
			})
			if err != nil {
				b.Fatal(err)
			}
			bare1.add(c)
			// bare-keys and harness take turns going first, so that
			// neither always follows the other.
			var k, h sideCounts
			keysRound := func() error {
				pprof.Do(ctx, pprof.Labels("side", "bare-keys"), func(context.Context) {
					k, err = bareKeysRound(bare, keys, timeout, harnessRound)
				})
				return err
			}
			path := filepath.Join(tmp, fmt.Sprintf("history-%d.jsonl", r))
			harnessSide := func() error {
				pprof.Do(ctx, pprof.Labels("side", "harness"), func(ctx context.Context) {
					h, err = harnessRound1(ctx, cfg, backend, path, harnessRound)
				})
				return err
			}
			first, second := keysRound, harnessSide
			if r%2 == 1 {
				first, second = harnessSide, keysRound
			}
			if err := first(); err != nil {
				b.Fatal(err)
			}
			if err := second(); err != nil {
				b.Fatal(err)
			}
			bareKeys.add(k)
			harness.add(h)
			rounds = append(rounds, h.rate()/k.rate())
			b.Logf("round %d: bare %.0f cycles/s, bare-keys %.0f holds/s, harness %.0f holds/s (%.3f)", r, c.rate(), k.rate(), h.rate(), h.rate()/k.rate())
		}
	}
	b.StopTimer()
	cycles := bare1.rate()
	hps := harness.rate()
	b.ReportMetric(cycles, "cycles/s")
	b.ReportMetric(hps, "holds/s")
	rps := float64(harness.reqs) / harness.took.Seconds()
	b.ReportMetric(rps, "lock-reqs/s")
	b.ReportMetric(hps/cycles, "harness/bare")
	b.ReportMetric(bareKeys.rate(), "bare-holds/s")
	b.ReportMetric(hps/bareKeys.rate(), "harness/bare-same-keys")
	b.ReportMetric(median(rounds), "round-ratio")
	b.ReportMetric(rps/(2*cycles), "reqs-ratio")
	b.ReportMetric(bareKeys.busyShare(), "busy-bare")
	b.ReportMetric(harness.busyShare(), "busy-harness")
	b.ReportMetric(bareKeys.cpuPerHold(), "bare-keys-cpu-us/hold")
	b.ReportMetric(harness.cpuPerHold(), "harness-cpu-us/hold")
}

// sideCounts is what one side did in its rounds: holds (cycles, for the
// own-keys loop), busy acquires, lock requests, and the time they took.
type sideCounts struct {
	holds, busy, reqs int64
	took              time.Duration
	// cpu is the process's CPU time (every thread: the runtime's too)
	// from the round's start to its end, and cpuHolds the holds made in
	// that span (for the harness, its clients' entry included).
	cpu      time.Duration
	cpuHolds int64
}

func (s *sideCounts) add(o sideCounts) {
	s.holds, s.busy, s.reqs, s.took = s.holds+o.holds, s.busy+o.busy, s.reqs+o.reqs, s.took+o.took
	s.cpu, s.cpuHolds = s.cpu+o.cpu, s.cpuHolds+o.cpuHolds
}

// cpuPerHold is the process's CPU time per hold, in microseconds.
func (s sideCounts) cpuPerHold() float64 {
	return float64(s.cpu.Nanoseconds()) / 1e3 / float64(s.cpuHolds)
}

// processCPU is the CPU time of the whole process (every thread: the
// runtime's and the recorder's flusher too), user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rate is holds per second.
func (s sideCounts) rate() float64 { return float64(s.holds) / s.took.Seconds() }

// busyShare is the share of acquires that found the key taken.
func (s sideCounts) busyShare() float64 {
	if s.holds+s.busy == 0 {
		return 0
	}
	return float64(s.busy) / float64(s.holds+s.busy)
}

// median is the middle of xs (the mean of the two middle ones for an even
// count); xs is sorted in place.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// newBareClients makes one redis-token Client per bare goroutine.
func newBareClients(ctx context.Context, backend backends.Backend) ([]backends.Client, error) {
	rec := history.NewRecorder(io.Discard, history.RecorderOptions{})
	defer rec.Close()
	var cs []backends.Client
	for p := range harnessClients {
		c, err := backend.Client(ctx, backends.ClientEnv{Process: p, Gate: clientfault.NewGate(), Clock: clientfault.NewClock(), History: rec.Proc(p)})
		if err != nil {
			for _, c := range cs {
				_ = c.Close()
			}
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// bareRound runs acquire/release cycles on every client, each on a key of
// its own, for d; it returns the cycles done and the time they took. A
// failed cycle is an error: nothing else uses these keys.
func bareRound(cs []backends.Client, timeout, d time.Duration) (sideCounts, error) {
	var n atomic.Int64
	var stop atomic.Bool
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	cpu0, start := processCPU(), time.Now()
	for p, c := range cs {
		key := fmt.Sprintf("bare%d", p)
		wg.Go(func() {
			for !stop.Load() {
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				g, err := c.Acquire(ctx, key)
				if err == nil {
					err = c.Release(ctx, key, g)
				}
				cancel()
				if err != nil {
					errs[p] = err
					return
				}
				n.Add(1)
			}
		})
	}
	time.Sleep(d)
	stop.Store(true)
	// The round's window ends here: cycles that end after it are not
	// counted.
	c := sideCounts{holds: n.Load(), took: time.Since(start), cpu: processCPU() - cpu0}
	c.reqs, c.cpuHolds = 2*c.holds, c.holds
	wg.Wait()
	return c, errors.Join(errs...)
}

// bareKeysRound is the bare loop with the workload's contention: each
// client picks one of keys at random, as the client loop does, acquires
// it, and releases it if it got it. It returns the holds (acquires that
// got the lock), the busy acquires, and the time they took. A busy key is
// not an error.
func bareKeysRound(cs []backends.Client, keys []string, timeout, d time.Duration) (sideCounts, error) {
	var n, busy atomic.Int64
	var stop atomic.Bool
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	cpu0, start := processCPU(), time.Now()
	for p, c := range cs {
		rng := rand.New(rand.NewPCG(1, uint64(p)+1))
		wg.Go(func() {
			for !stop.Load() {
				key := keys[rng.IntN(len(keys))]
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				g, err := c.Acquire(ctx, key)
				if err == nil {
					err = c.Release(ctx, key, g)
					if err == nil {
						n.Add(1)
					}
				} else if errors.Is(err, backends.ErrBusy) {
					busy.Add(1)
					err = nil
				}
				cancel()
				if err != nil {
					errs[p] = err
					return
				}
			}
		})
	}
	time.Sleep(d)
	stop.Store(true)
	h, bz := n.Load(), busy.Load()
	c := sideCounts{holds: h, busy: bz, reqs: 2*h + bz, took: time.Since(start), cpu: processCPU() - cpu0, cpuHolds: h}
	wg.Wait()
	return c, errors.Join(errs...)
}

// harnessRound1 runs the client loop for d, recording into a new history
// file at path as the runner does, and returns the holds (acquire ok),
// the busy acquires, the lock requests (acquire and release completions)
// and the time from Run's start to its return. The clients are made and
// connected before the clock starts, as the runner makes them before the
// run's time 0. The history is read back, counted and checked afterwards.
func harnessRound1(ctx context.Context, cfg workload.Config, backend backends.Backend, path string, d time.Duration) (sideCounts, error) {
	f, err := os.Create(path)
	if err != nil {
		return sideCounts{}, err
	}
	defer f.Close()
	var live reports.Live
	var engine *nemesis.Engine
	rec := history.NewRecorder(f, history.RecorderOptions{Observe: func(op history.Op) {
		// The runner's observer: the live counts, then the nemesis.
		live.Observe(&op)
		engine.Observe(op)
	}})
	live.OpsFrom(rec.Len)
	res, err := workload.NewMemory(workload.FenceNone)
	if err != nil {
		return sideCounts{}, err
	}
	procs := workload.NewProcs(cfg.Clients, rec)
	engine = nemesis.NewEngine(ctx, &nemesis.Env{Gates: procs.Gates, Clocks: procs.Clocks}, rec, nil)
	if err := procs.Open(ctx, backend); err != nil {
		return sideCounts{}, err
	}
	defer procs.Close()
	rec.StartNow()
	// A run's context can be cancelled (an interrupt ends the run): every
	// request's timeout hangs from it, as in a run.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := make(chan struct{})
	var stopAt atomic.Int64 // on the recorder's clock
	var cpu time.Duration
	cpu0 := processCPU()
	t := time.AfterFunc(d, func() {
		stopAt.Store(rec.Now())
		cpu = processCPU() - cpu0
		close(stop)
	})
	defer t.Stop()
	err = workload.Run(ctx, stop, cfg, backend, res, procs)
	if cerr := rec.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return sideCounts{}, err
	}
	// Counted from the file, afterwards: counting as the ops came would
	// add the benchmark's own work to the harness's.
	ops, err := history.ReadFile(path)
	if err != nil {
		return sideCounts{}, err
	}
	// The window: from the moment the last client made its first request
	// (the clients enter one after another) to stop.
	first := map[int]bool{}
	var from int64
	for _, op := range ops {
		if !first[op.Process] {
			first[op.Process], from = true, op.Time
		}
	}
	to := stopAt.Load()
	c := sideCounts{took: time.Duration(to - from), cpu: cpu}
	for _, op := range ops {
		if op.Type == history.OK && op.F == history.Acquire && op.Time <= to {
			c.cpuHolds++
		}
		if op.Type == history.Invoke || (op.F != history.Acquire && op.F != history.Release) || op.Time < from || op.Time > to {
			continue
		}
		c.reqs++
		switch {
		case op.F != history.Acquire:
		case op.Type == history.OK:
			c.holds++
		case op.Type == history.Fail:
			c.busy++
		}
	}
	return c, checkShape(ops)
}

// checkShape fails a history whose requests failed for any reason other
// than a busy key: the benchmark would be measuring errors.
func checkShape(ops []history.Op) error {
	for _, op := range ops {
		if op.Type == history.Info || (op.Type == history.Fail && op.Error != "busy") {
			return fmt.Errorf("op %d: %s %s %s: %s", op.Index, op.Type, op.F, op.Key, op.Error)
		}
	}
	return nil
}

// ownCostHolds is how many holds BenchmarkHarnessOwnCost counts on each
// side, whatever b.N (make bench runs it once).
const ownCostHolds = 200_000

// BenchmarkHarnessOwnCost measures the harness's own CPU per hold, with no
// network in the way: one client on 8 keys of an in-process lock that
// answers at once, through the client loop recording as the runner does
// (history to a file, reports.Live and a nemesis engine observing) and
// through the bare loop (acquire a random key, release it). It reports the
// process's CPU time per hold of each (bare-ns/hold, harness-ns/hold) and
// own-ns/hold, their difference: the CPU each hold of BenchmarkHarness
// spends in the harness beside its two round trips; and the harness's
// allocations per hold.
func BenchmarkHarnessOwnCost(b *testing.B) {
	keys := make([]string, harnessKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	ctx := context.Background()
	timeout := 2 * time.Second
	var bareT, harnessT time.Duration
	var allocs uint64
	// CPU time of the whole process (every thread: the flusher and the
	// garbage collector too), not wall time, which a loaded machine's
	// other work stretches.
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for range b.N {
		backend := &instantLock{held: map[string]bool{}}
		c, _ := backend.Client(ctx, backends.ClientEnv{})
		rng := rand.New(rand.NewPCG(1, 1))
		start := cpu()
		for n := 0; n < ownCostHolds; {
			key := keys[rng.IntN(len(keys))]
			actx, cancel := context.WithTimeout(ctx, timeout)
			g, err := c.Acquire(actx, key)
			if err == nil {
				if err := c.Release(actx, key, g); err != nil {
					b.Fatal(err)
				}
				n++
			}
			cancel()
		}
		bareT += cpu() - start

		path := filepath.Join(b.TempDir(), "history.jsonl")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		var live reports.Live
		var engine *nemesis.Engine
		stop := make(chan struct{})
		backend.grants, backend.stopAt, backend.stop = 0, ownCostHolds, stop
		rec := history.NewRecorder(f, history.RecorderOptions{Observe: func(op history.Op) {
			live.Observe(&op)
			engine.Observe(op)
		}})
		live.OpsFrom(rec.Len)
		cfg := workload.Config{Clients: 1, Keys: keys, Hold: time.Nanosecond,
			ThinkMin: time.Nanosecond, ThinkMax: time.Nanosecond, OpTimeout: timeout, Seed: 1}
		procs := workload.NewProcs(cfg.Clients, rec)
		engine = nemesis.NewEngine(ctx, &nemesis.Env{Gates: procs.Gates, Clocks: procs.Clocks}, rec, nil)
		res, err := workload.NewMemory(workload.FenceNone)
		if err != nil {
			b.Fatal(err)
		}
		if err := procs.Open(ctx, backend); err != nil {
			b.Fatal(err)
		}
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		start = cpu()
		err = workload.Run(ctx, stop, cfg, backend, res, procs)
		harnessT += cpu() - start
		runtime.ReadMemStats(&ms1)
		allocs += ms1.Mallocs - ms0.Mallocs
		if cerr := rec.Close(); err == nil {
			err = cerr
		}
		_ = f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N * ownCostHolds)
	b.ReportMetric(float64(bareT.Nanoseconds())/n, "bare-ns/hold")
	b.ReportMetric(float64(harnessT.Nanoseconds())/n, "harness-ns/hold")
	b.ReportMetric(float64((harnessT-bareT).Nanoseconds())/n, "own-ns/hold")
	b.ReportMetric(float64(allocs)/n, "harness-allocs/hold")
}

// instantLock is an in-process lock that answers at once: a key held by
// one client is busy to every other, as a Redis lock's is. With stopAt
// set it closes stop at its stopAt-th grant.
type instantLock struct {
	mu     sync.Mutex
	held   map[string]bool
	grants int
	stopAt int
	stop   chan struct{}
}

// Client implements backends.Backend.
func (l *instantLock) Client(context.Context, backends.ClientEnv) (backends.Client, error) {
	return instantClient{l}, nil
}

// Close implements backends.Backend.
func (l *instantLock) Close() error { return nil }

type instantClient struct{ l *instantLock }

func (c instantClient) Acquire(ctx context.Context, key string) (backends.Grant, error) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.l.held[key] {
		return backends.Grant{}, backends.ErrBusy
	}
	c.l.held[key] = true
	if c.l.grants++; c.l.grants == c.l.stopAt {
		close(c.l.stop)
	}
	return backends.Grant{Lease: 10 * time.Second, HasLease: true, Token: "t"}, nil
}

func (c instantClient) Release(ctx context.Context, key string, g backends.Grant) error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if !c.l.held[key] {
		return backends.ErrNotHeld
	}
	delete(c.l.held, key)
	return nil
}

func (c instantClient) Close() error { return nil }
