package workload_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/clientsim"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/leakcheck"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/workload"
)

// The harness benchmark's shape: the run (redis-token, 8 clients,
// 8 keys, hold and think 1ns), in interleaved rounds.
const (
	harnessClients = 8
	harnessKeys    = 8
	harnessRounds  = 6
	harnessRound   = time.Second
)

// BenchmarkHarness measures what the harness costs a lock: on one
// redis-server it runs, in alternating rounds of harnessRound each,
//
//   - bare: 8 goroutines, each looping acquire and release of a key of
//     its own through the redis-token backend's Client (as BenchmarkCycles
//     in backends does), counting cycles (both calls succeeded);
//
//   - harness: workload.Run with the same backend, 8 clients on 8 keys,
//     hold and think 1ns, the memory resource, and a history Recorder
//     streaming to a file as a real run does (kept in memory too, with an
//     observer, as the runner sets one up), counting holds (acquire ok).
//     Each hold is acquire, read, write, release: 8 history ops and 4
//     requests, 2 of them to Redis; an acquire that finds the key busy
//     (another client holds it) is 2 ops and one request, and no hold.
//
//   - bare-keys: the bare loop with the workload's contention — each of
//     8 goroutines picks one of the 8 keys at random, acquires it and, if
//     it got it, releases it — counting holds as the harness does. The
//     like-for-like ratio is harness/bare-same-keys: holds/s through the
//     harness over holds/s of this loop, in the same rounds; what is left
//     between them is the harness's own cost.
//
// It reports cycles/s, holds/s, lock-reqs/s (the harness's acquires and
// releases, busy ones included), harness/bare: the ratio of holds/s to
// cycles/s over the sums of all rounds, and reqs-ratio: lock-reqs/s to the
// bare loop's requests per second (2 a cycle). Busy acquires are part of
// the workload (8 clients pick among 8 keys at random; each holds a key
// about half its time, so about a third of acquires find it taken), so
// holds/s cannot reach cycles/s even with a free harness: reqs-ratio is
// the one that compares Redis round trips like for like. Run it as
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

	var bareN, bareKeysN, holds, reqs int64
	var bareT, bareKeysT, harnessT time.Duration
	b.ResetTimer()
	for range b.N {
		for r := range harnessRounds {
			// The labels split a -cpuprofile: pprof -tagfocus side=harness.
			var n, h, q int64
			var d time.Duration
			pprof.Do(ctx, pprof.Labels("side", "bare"), func(context.Context) {
				n, d, err = bareRound(bare, timeout, harnessRound)
			})
			if err != nil {
				b.Fatal(err)
			}
			bareN, bareT = bareN+n, bareT+d
			pprof.Do(ctx, pprof.Labels("side", "bare-keys"), func(context.Context) {
				n, d, err = bareKeysRound(bare, keys, timeout, harnessRound)
			})
			if err != nil {
				b.Fatal(err)
			}
			bareKeysN, bareKeysT = bareKeysN+n, bareKeysT+d
			path := filepath.Join(tmp, fmt.Sprintf("history-%d.jsonl", r))
			pprof.Do(ctx, pprof.Labels("side", "harness"), func(ctx context.Context) {
				h, q, d, err = harnessRound1(ctx, cfg, backend, path, harnessRound)
			})
			if err != nil {
				b.Fatal(err)
			}
			holds, reqs, harnessT = holds+h, reqs+q, harnessT+d
			b.Logf("round %d: bare %.0f cycles/s, harness %.0f holds/s", r, float64(n)/harnessRound.Seconds(), float64(h)/d.Seconds())
		}
	}
	b.StopTimer()
	cycles := float64(bareN) / bareT.Seconds()
	hps := float64(holds) / harnessT.Seconds()
	b.ReportMetric(cycles, "cycles/s")
	b.ReportMetric(hps, "holds/s")
	rps := float64(reqs) / harnessT.Seconds()
	b.ReportMetric(rps, "lock-reqs/s")
	b.ReportMetric(hps/cycles, "harness/bare")
	bareHolds := float64(bareKeysN) / bareKeysT.Seconds()
	b.ReportMetric(bareHolds, "bare-holds/s")
	b.ReportMetric(hps/bareHolds, "harness/bare-same-keys")
	b.ReportMetric(rps/(2*cycles), "reqs-ratio")
}

// newBareClients makes one redis-token Client per bare goroutine.
func newBareClients(ctx context.Context, backend backends.Backend) ([]backends.Client, error) {
	rec := history.NewRecorder(io.Discard, history.RecorderOptions{})
	defer rec.Close()
	var cs []backends.Client
	for p := range harnessClients {
		c, err := backend.Client(ctx, backends.ClientEnv{Process: p, Gate: clientsim.NewGate(), Clock: clientsim.NewClock(), History: rec.Proc(p)})
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
func bareRound(cs []backends.Client, timeout, d time.Duration) (int64, time.Duration, error) {
	var n atomic.Int64
	var stop atomic.Bool
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	start := time.Now()
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
	wg.Wait()
	return n.Load(), time.Since(start), errors.Join(errs...)
}

// bareKeysRound is the bare loop with the workload's contention: each
// client picks one of keys at random, as the client loop does, acquires
// it, and releases it if it got it. It returns the holds (acquires that
// got the lock) and the time they took. A busy key is not an error.
func bareKeysRound(cs []backends.Client, keys []string, timeout, d time.Duration) (int64, time.Duration, error) {
	var n atomic.Int64
	var stop atomic.Bool
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	start := time.Now()
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
	wg.Wait()
	return n.Load(), time.Since(start), errors.Join(errs...)
}

// harnessRound1 runs the client loop for d, recording into a new history
// file at path, and returns the holds (acquire ok), the lock requests
// (acquire and release completions) and the time from Run's start to its
// return.
func harnessRound1(ctx context.Context, cfg workload.Config, backend backends.Backend, path string, d time.Duration) (holds, reqs int64, took time.Duration, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	var nh, nq atomic.Int64
	rec := history.NewRecorder(f, history.RecorderOptions{Keep: true, Observe: func(op history.Op) {
		if op.Type == history.Invoke || (op.F != history.Acquire && op.F != history.Release) {
			return
		}
		nq.Add(1)
		if op.F == history.Acquire && op.Type == history.OK {
			nh.Add(1)
		}
	}})
	res, err := workload.NewMemory(workload.FenceNone)
	if err != nil {
		return 0, 0, 0, err
	}
	stop := make(chan struct{})
	start := time.Now()
	t := time.AfterFunc(d, func() { close(stop) })
	defer t.Stop()
	err = workload.Run(ctx, stop, cfg, backend, res, workload.NewProcs(cfg.Clients, rec))
	took = time.Since(start)
	if cerr := rec.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = checkShape(rec.History())
	}
	return nh.Load(), nq.Load(), took, err
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
