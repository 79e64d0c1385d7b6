package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/clientfault"
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
	// ReleaseRetry, when positive, retries a release whose outcome is
	// unknown (info) every ReleaseRetry in the background, until the
	// backend reports it done (ok) or certainly not (fail), while the
	// process goes on with its next rounds: what careful application code
	// does when a release's reply is lost. The retries call the same
	// client concurrently with its acquires and are not recorded (a
	// process has one op at a time); they end with the process's loop.
	ReleaseRetry time.Duration
	// EntryWait bounds how long each client's first request waits for
	// the previous client's first reply (0: entryWait).
	EntryWait time.Duration
}

// Procs are the simulated client processes of a run: process p's pause
// gate, clock and history recorder are Gates[p], Clocks[p] and History[p].
type Procs struct {
	Gates   []*clientfault.Gate
	Clocks  []*clientfault.Clock
	History []*history.Proc

	// clients are the lock clients Open made, for Run to use.
	clients []backends.Client
}

// Open makes every process's lock client now, before the run starts (and
// before its first faults strike), for the next Run to use: a client is
// connected before its first lock, as a service's is. Without Open, Run
// makes them itself. Close closes clients a Run did not get to.
func (ps *Procs) Open(ctx context.Context, backend backends.Backend) error {
	ps.Close()
	cs := make([]backends.Client, 0, len(ps.Gates))
	for p := range ps.Gates {
		c, err := backend.Client(ctx, backends.ClientEnv{Process: p, Gate: ps.Gates[p], History: ps.History[p], Clock: ps.Clocks[p]})
		if err != nil {
			for _, c := range cs {
				_ = c.Close()
			}
			return fmt.Errorf("workload: client %d: %w", p, err)
		}
		cs = append(cs, c)
	}
	ps.clients = cs
	return nil
}

// Close closes the clients Open made that no Run has taken.
func (ps *Procs) Close() {
	for _, c := range ps.clients {
		_ = c.Close()
	}
	ps.clients = nil
}

// NewProcs makes n processes recording into rec.
func NewProcs(n int, rec *history.Recorder) *Procs {
	ps := &Procs{}
	for p := range n {
		ps.Gates = append(ps.Gates, clientfault.NewGate())
		ps.Clocks = append(ps.Clocks, clientfault.NewClock())
		ps.History = append(ps.History, rec.Proc(p))
	}
	return ps
}

// Run drives cfg.Clients processes through backend and res until stop is
// closed (each finishes its round and releases) or ctx ends (the harness
// is aborting). Every step is recorded; the recorder's observer sees each
// op on the client's own goroutine, before the client's next step.
func Run(ctx context.Context, stop <-chan struct{}, cfg Config, backend backends.Backend, res Resource, procs *Procs) error {
	if procs == nil || len(procs.Gates) != cfg.Clients || len(procs.Clocks) != cfg.Clients || len(procs.History) != cfg.Clients {
		return fmt.Errorf("workload: process set does not match %d clients", cfg.Clients)
	}
	if len(cfg.Keys) == 0 {
		return errors.New("workload: no keys")
	}
	if procs.clients == nil {
		if err := procs.Open(ctx, backend); err != nil {
			return err
		}
	}
	// Run owns the clients now: it closes them when it ends.
	clients := procs.clients
	procs.clients = nil
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	// The think time between rounds ends early once stop is closed: a
	// client thinking then would start no other round, so sleeping the
	// rest of it out only kept the run from ending. A client in a request
	// or its critical section finishes it as before.
	thinkCtx, endThink := context.WithCancel(ctx)
	defer endThink()
	go func() {
		select {
		case <-stop:
			endThink()
		case <-thinkCtx.Done():
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, cfg.Clients)
	// Clients enter in order: each one's first request waits (up to
	// entryWait) for the previous client's first reply, so that client 0
	// asks first, as the canonical scenarios tell it ("client 0 acquires,
	// then pauses"). After that, contention is the seeded random loop's.
	entered := make([]chan struct{}, cfg.Clients)
	for p := range entered {
		entered[p] = make(chan struct{})
	}
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
			l := &loop{p: p, cfg: cfg, c: clients[p], res: res, h: procs.History[p], gate: procs.Gates[p],
				rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(p)+1)), entered: entered[p], thinkCtx: thinkCtx}
			defer l.enter()
			if p > 0 {
				wait := cfg.EntryWait
				if wait <= 0 {
					wait = entryWait
				}
				t := time.NewTimer(wait)
				select {
				case <-entered[p-1]:
				case <-t.C:
				case <-stop:
				case <-ctx.Done():
				}
				t.Stop()
			}
			errs[p] = l.run(ctx, stop)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// entryWait bounds how long a client waits for the previous one's first
// reply before it starts anyway (the previous one may be paused or cut off),
// unless Config.EntryWait says otherwise.
const entryWait = 100 * time.Millisecond

type loop struct {
	p    int
	cfg  Config
	c    backends.Client
	res  Resource
	h    *history.Proc
	gate *clientfault.Gate
	rng  *rand.Rand
	// entered is closed once this client's first acquire has completed
	// (or its loop ended), letting the next client in.
	entered   chan struct{}
	enterOnce sync.Once
	// thinkCtx is ctx, also ended when the run's stop is closed: the
	// think time between rounds waits on it (nil: ctx alone).
	thinkCtx context.Context
	// retryCtx ends the background release retries (Config.ReleaseRetry)
	// when the loop ends; retries counts those running.
	retryCtx context.Context
	retries  sync.WaitGroup
	// requests gives each lock request its context (see opTimer);
	// endRequest cancels the request's when it is a standard one.
	requests   *opTimer
	endRequest context.CancelFunc
	// lease is the last LeaseMS recorded (see leaseMS).
	lease *int64
}

// leaseMS is lease in milliseconds, for an op's LeaseMS: the previous
// grant's when it is the same, as it nearly always is (no op's pointer is
// written through: ops share them, as a grant's ops share its Fence).
func (l *loop) leaseMS(lease time.Duration) *int64 {
	ms := lease.Milliseconds()
	if l.lease == nil || *l.lease != ms {
		l.lease = history.Int64(ms)
	}
	return l.lease
}

// request returns the context of a lock request made under ctx, which ends
// within the op timeout; requestDone ends it when the request is over.
func (l *loop) request(ctx context.Context) context.Context {
	if l.requests != nil && ctx == l.requests.parent {
		return l.requests.start(l.cfg.OpTimeout)
	}
	ctx, l.endRequest = context.WithTimeout(ctx, l.cfg.OpTimeout)
	return ctx
}

// requestDone ends the context of the request that request gave.
func (l *loop) requestDone(ctx context.Context) {
	if l.endRequest != nil {
		l.endRequest()
		l.endRequest = nil
		return
	}
	l.requests.end(ctx)
}

// enter lets the next client make its first request.
func (l *loop) enter() { l.enterOnce.Do(func() { close(l.entered) }) }

// record records an invocation or a completion of the process's op.
func (l *loop) record(ctx context.Context, op history.Op) error {
	var err error
	if op.Type == history.Invoke {
		_, err = l.h.Invoke(ctx, op)
	} else {
		_, err = l.h.Complete(op)
	}
	if err != nil {
		return fmt.Errorf("workload: process %d: %w", l.p, err)
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

// spinBelow is the shortest wait sleep gives a timer: below it, a timer
// costs more than the wait itself.
const spinBelow = time.Microsecond

// sleep waits d and then at the process's gate, as clientfault.Gate.Sleep
// does. A wait shorter than spinBelow (a hold or think of 1ns) is spun out
// on the clock instead of a timer: parking the goroutine for it hands the
// CPU to others mid-hold, and the key stays held until the scheduler
// comes back.
func (l *loop) sleep(ctx context.Context, d time.Duration) error {
	if d > 0 && d < spinBelow {
		for start := time.Now(); time.Since(start) < d; {
		}
		d = 0
	}
	return l.gate.Sleep(ctx, d)
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
	rctx, endRetries := context.WithCancel(ctx)
	l.retryCtx = rctx
	l.requests = newOpTimer(ctx)
	defer func() {
		endRetries()
		l.retries.Wait()
		l.requests.close()
	}()
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
		tctx := l.thinkCtx
		if tctx == nil {
			tctx = ctx
		}
		if err := l.sleep(tctx, l.think()); err != nil {
			return nil
		}
	}
	return nil
}

// round does one attempt on key. Only a harness failure is returned.
func (l *loop) round(ctx context.Context, key string) error {
	if err := l.record(ctx, history.Op{Type: history.Invoke, F: history.Acquire, Key: key}); err != nil {
		return err
	}
	octx := l.request(ctx)
	g, aerr := l.c.Acquire(octx, key)
	l.requestDone(octx)
	done := history.Op{Type: backends.Outcome(aerr), F: history.Acquire, Key: key}
	if aerr != nil {
		done.Error = errString(aerr)
	} else {
		done.Fence = g.Fence
		if t, ok := l.res.(txResource); ok && t.InTx(g) {
			// Everything done through this grant commits with its release.
			done.Tx = true
		}
		if len(g.Nodes) > 0 {
			done.Value = history.ObjectValue(map[string]any{"nodes": g.Nodes})
		}
		if g.HasLease {
			done.LeaseMS = l.leaseMS(g.Lease)
		}
	}
	err := l.record(ctx, done)
	l.enter() // the first reply is in: the next client may ask
	if errors.Is(aerr, backends.ErrAbort) {
		return aerr
	}
	if err != nil || aerr != nil {
		return err
	}
	// The critical section. Each step waits at the gate first: a paused
	// client stops here, still believing it holds the lock.
	stopWatch := l.watchLost(ctx, key, g)
	if err := l.critical(ctx, key, g); err != nil {
		stopWatch()
		return err
	}
	if err := l.gate.Wait(ctx); err != nil {
		stopWatch()
		return nil
	}
	stopWatch()
	return l.release(ctx, key, g)
}

// watchLost records a lost op (an invoke and its ok) the moment the
// backend's watchdog tells the client that the lock on key is gone, as
// evidence: the client's hold ends there, not at its later release. The
// returned stop, called before the release, ends the watch; a lost that
// came first is recorded by then.
func (l *loop) watchLost(ctx context.Context, key string, g backends.Grant) (stop func()) {
	if g.Lost == nil {
		return func() {}
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-g.Lost:
		case <-wctx.Done():
			return
		}
		// Waits while another op of the process is outstanding.
		_, _ = l.h.Instant(wctx, history.Op{F: history.Lost, Key: key})
	}()
	return func() {
		if l.lost(g) {
			// Known lost: let the watcher record it before the release.
			select {
			case <-done:
			case <-ctx.Done():
			}
		}
		cancel()
		<-done
	}
}

func (l *loop) critical(ctx context.Context, key string, g backends.Grant) error {
	if l.gate.Wait(ctx) != nil || l.lost(g) {
		return nil
	}
	if err := l.record(ctx, history.Op{Type: history.Invoke, F: history.Read, Key: key, Fence: g.Fence}); err != nil {
		return err
	}
	v, err := l.res.Read(ctx, key, g)
	if err != nil {
		return l.record(ctx, history.Op{Type: resourceOutcome(err), F: history.Read, Key: key, Fence: g.Fence, Error: errString(err)})
	}
	read, val := history.IntValues(v, v+1)
	if err := l.record(ctx, history.Op{Type: history.OK, F: history.Read, Key: key, Fence: g.Fence, Value: read}); err != nil {
		return err
	}
	if l.sleep(ctx, l.cfg.Hold) != nil || l.lost(g) {
		return nil
	}
	tx := false
	if t, ok := l.res.(txResource); ok {
		tx = t.InTx(g)
	}
	if err := l.record(ctx, history.Op{Type: history.Invoke, F: history.Write, Key: key, Fence: g.Fence, Value: val, Tx: tx}); err != nil {
		return err
	}
	werr := l.res.Write(ctx, key, v+1, g)
	done := history.Op{Type: resourceOutcome(werr), F: history.Write, Key: key, Fence: g.Fence, Value: val, Tx: tx}
	if werr != nil {
		done.Error = errString(werr)
	}
	return l.record(ctx, done)
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
	if err := l.record(ctx, history.Op{Type: history.Invoke, F: history.Release, Key: key, Fence: g.Fence}); err != nil {
		return err
	}
	octx := l.request(ctx)
	err := l.c.Release(octx, key, g)
	l.requestDone(octx)
	done := history.Op{Type: backends.Outcome(err), F: history.Release, Key: key, Fence: g.Fence}
	if err != nil {
		done.Error = errString(err)
	}
	rerr := l.record(ctx, done)
	if done.Type == history.Info && l.cfg.ReleaseRetry > 0 && !errors.Is(err, backends.ErrAbort) {
		l.retryRelease(key, g)
	}
	if rerr != nil || !errors.Is(err, backends.ErrAbort) {
		return rerr
	}
	return err
}

// retryRelease retries the release of g, whose outcome was unknown, every
// Config.ReleaseRetry in the background (each wait at the process's gate:
// a paused process retries nothing) until the backend says it is done or
// certainly not, or the loop ends. The retries are not recorded: the
// process's own ops go on meanwhile, one at a time.
func (l *loop) retryRelease(key string, g backends.Grant) {
	ctx := l.retryCtx
	if ctx == nil {
		return
	}
	l.retries.Add(1)
	go func() {
		defer l.retries.Done()
		for {
			if l.gate.Sleep(ctx, l.cfg.ReleaseRetry) != nil {
				return
			}
			octx, cancel := context.WithTimeout(ctx, l.cfg.OpTimeout)
			err := l.c.Release(octx, key, g)
			cancel()
			if backends.Outcome(err) != history.Info || errors.Is(err, backends.ErrAbort) || ctx.Err() != nil {
				return
			}
		}
	}()
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
