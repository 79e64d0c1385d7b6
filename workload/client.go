package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
)

// Config shapes the client loop.
type Config struct {
	// Clients is the number of simulated processes, numbered from 0.
	Clients int
	// Keys are the lock keys (and resource keys) the clients contend for.
	Keys []string
	// Hold is how long a client works inside its critical section.
	Hold time.Duration
	// ThinkMin and ThinkMax bound the random pause between rounds and
	// after a busy acquire.
	ThinkMin, ThinkMax time.Duration
	// OpTimeout bounds every lock request.
	OpTimeout time.Duration
	// Seed seeds each process's choices (process p uses Seed+p).
	Seed int64
}

// Observer is told of every op right after it is recorded, on the client's
// own goroutine, so a nemesis can freeze the client before its next step.
type Observer func(op history.Op)

// Run drives cfg.Clients processes through backend and res until stop is
// closed (each finishes its round and releases) or ctx ends (the harness
// is aborting). gates[p] freezes process p. Every step is recorded.
func Run(ctx context.Context, stop <-chan struct{}, cfg Config, backend backends.Backend, res Resource, rec *history.Recorder, gates []*cluster.Gate, observe Observer) error {
	if len(gates) != cfg.Clients {
		return fmt.Errorf("workload: %d gates for %d clients", len(gates), cfg.Clients)
	}
	if len(cfg.Keys) == 0 {
		return errors.New("workload: no keys")
	}
	clients := make([]backends.Client, cfg.Clients)
	for p := range cfg.Clients {
		c, err := backend.Client(ctx, p, gates[p])
		if err != nil {
			for _, c := range clients[:p] {
				_ = c.Close()
			}
			return fmt.Errorf("workload: client %d: %w", p, err)
		}
		clients[p] = c
	}
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, cfg.Clients)
	for p := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				// A crashing client must not take the harness down with
				// its servers still running: report it as an error.
				if r := recover(); r != nil {
					errs[p] = fmt.Errorf("workload: process %d panicked: %v", p, r)
				}
			}()
			l := &loop{p: p, cfg: cfg, c: clients[p], res: res, rec: rec, gate: gates[p], observe: observe,
				rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(p)+1))}
			errs[p] = l.run(ctx, stop)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

type loop struct {
	p       int
	cfg     Config
	c       backends.Client
	res     Resource
	rec     *history.Recorder
	gate    *cluster.Gate
	observe Observer
	rng     *rand.Rand
}

func (l *loop) record(op history.Op) error {
	op.Process = l.p
	done, err := l.rec.Record(op)
	if err != nil {
		return fmt.Errorf("workload: process %d: %w", l.p, err)
	}
	if l.observe != nil {
		l.observe(done)
	}
	return nil
}

func (l *loop) think() time.Duration {
	lo, hi := l.cfg.ThinkMin, l.cfg.ThinkMax
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(l.rng.Int64N(int64(hi-lo)))
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// run is one process's loop: acquire, read, work, write v+1, release.
func (l *loop) run(ctx context.Context, stop <-chan struct{}) error {
	for !stopped(stop) {
		if err := l.gate.Wait(ctx); err != nil {
			return nil
		}
		// A client paused across the end of the run wakes to find it over.
		if ctx.Err() != nil || stopped(stop) {
			return nil
		}
		key := l.cfg.Keys[l.rng.IntN(len(l.cfg.Keys))]
		if err := l.round(ctx, key); err != nil {
			return err
		}
		if err := l.gate.Sleep(ctx, l.think()); err != nil {
			return nil
		}
	}
	return nil
}

// round does one attempt on key. Only a harness failure is returned.
func (l *loop) round(ctx context.Context, key string) error {
	if err := l.record(history.Op{Type: history.Invoke, F: history.Acquire, Key: key}); err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, l.cfg.OpTimeout)
	g, err := l.c.Acquire(octx, key)
	cancel()
	done := history.Op{Type: backends.Outcome(err), F: history.Acquire, Key: key}
	if err != nil {
		done.Error = errString(err)
		return l.record(done)
	}
	done.Fence = g.Fence
	if g.HasLease {
		done.LeaseMS = history.Int64(g.Lease.Milliseconds())
	}
	if err := l.record(done); err != nil {
		return err
	}
	// The critical section. Each step waits at the gate first: a paused
	// client stops here, still believing it holds the lock.
	if err := l.critical(ctx, key, g); err != nil {
		return err
	}
	if err := l.gate.Wait(ctx); err != nil {
		return nil
	}
	return l.release(ctx, key, g)
}

func (l *loop) critical(ctx context.Context, key string, g backends.Grant) error {
	if l.gate.Wait(ctx) != nil || l.lost(g) {
		return nil
	}
	if err := l.record(history.Op{Type: history.Invoke, F: history.Read, Key: key, Fence: g.Fence}); err != nil {
		return err
	}
	v, err := l.res.Read(ctx, key, g.Fence)
	if err != nil {
		return l.record(history.Op{Type: resourceOutcome(err), F: history.Read, Key: key, Fence: g.Fence, Error: errString(err)})
	}
	if err := l.record(history.Op{Type: history.OK, F: history.Read, Key: key, Fence: g.Fence, Value: history.IntValue(v)}); err != nil {
		return err
	}
	if l.gate.Sleep(ctx, l.cfg.Hold) != nil || l.lost(g) {
		return nil
	}
	val := history.IntValue(v + 1)
	if err := l.record(history.Op{Type: history.Invoke, F: history.Write, Key: key, Fence: g.Fence, Value: val}); err != nil {
		return err
	}
	werr := l.res.Write(ctx, key, v+1, g.Fence)
	done := history.Op{Type: resourceOutcome(werr), F: history.Write, Key: key, Fence: g.Fence, Value: val}
	if werr != nil {
		done.Error = errString(werr)
	}
	return l.record(done)
}

// lost reports whether the backend's watchdog has told the client that the
// lock is gone; the client then abandons its critical section.
func (l *loop) lost(g backends.Grant) bool {
	if g.Lost == nil {
		return false
	}
	select {
	case <-g.Lost:
		return true
	default:
		return false
	}
}

func (l *loop) release(ctx context.Context, key string, g backends.Grant) error {
	if err := l.record(history.Op{Type: history.Invoke, F: history.Release, Key: key, Fence: g.Fence}); err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, l.cfg.OpTimeout)
	err := l.c.Release(octx, key, g)
	cancel()
	done := history.Op{Type: backends.Outcome(err), F: history.Release, Key: key, Fence: g.Fence}
	if err != nil {
		done.Error = errString(err)
	}
	return l.record(done)
}

// resourceOutcome maps a resource error: a stale-fence rejection certainly
// did not happen; anything else is unknown.
func resourceOutcome(err error) history.Type {
	switch {
	case err == nil:
		return history.OK
	case errors.Is(err, ErrStale):
		return history.Fail
	}
	return backends.Outcome(err)
}

func errString(err error) string {
	switch {
	case errors.Is(err, backends.ErrBusy):
		return "busy"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout: " + err.Error()
	}
	return err.Error()
}

// FinalReads reads every key once more as process 0, after the clients
// have stopped and every fault is healed.
func FinalReads(ctx context.Context, keys []string, res Resource, rec *history.Recorder) error {
	for _, k := range keys {
		if _, err := rec.Record(history.Op{Process: 0, Type: history.Invoke, F: history.FinalRead, Key: k}); err != nil {
			return err
		}
		v, err := res.FinalRead(ctx, k)
		op := history.Op{Process: 0, Type: history.OK, F: history.FinalRead, Key: k}
		if err != nil {
			op.Type, op.Error = backends.Outcome(err), err.Error()
		} else {
			op.Value = history.IntValue(v)
		}
		if _, err := rec.Record(op); err != nil {
			return err
		}
	}
	return nil
}
