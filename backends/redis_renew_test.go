package backends

import (
	"errors"
	"testing"
	"time"

	"github.com/locktorture/locktorture/history"
)

func startRenew(t *testing.T, ttl time.Duration) (Backend, Env) {
	t.Helper()
	env := Env{Cluster: testCluster(t), TTL: ttl, OpTimeout: time.Second, Clients: 2, Keys: []string{"k0"}, Seed: 1}
	b, err := newRedisRenew(guard(t), env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, env
}

func renewClient(t *testing.T, b Backend, p *testProc) Client {
	t.Helper()
	c, err := b.Client(guard(t), p.env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// extends returns the process's extend completions.
func extends(ops []history.Op) (ok, other []history.Op) {
	for _, op := range ops {
		if op.F != history.Extend || op.Type == history.Invoke {
			continue
		}
		if op.Type == history.OK {
			ok = append(ok, op)
		} else {
			other = append(other, op)
		}
	}
	return ok, other
}

// TestRenewWatchdogKeepsLease: a holder that keeps running holds the lock
// past its TTL, across four extends of the watchdog (one every TTL/3: the
// fourth is more than a TTL after the grant): the extends (recorded, each
// with a lease) keep the key alive, a second client stays out, and the
// release finds the lock still ours. The TTL leaves the watchdog 800ms to
// be late by: a process stalled that long on a loaded machine (400ms was
// seen at load 25 with a 400ms TTL) loses its lease, as it should, which
// is not what this test is about.
func TestRenewWatchdogKeepsLease(t *testing.T) {
	const ttl = 1200 * time.Millisecond
	b, _ := startRenew(t, ttl)
	p0, p1 := newTestProc(0), newTestProc(1)
	c0, c1 := renewClient(t, b, p0), renewClient(t, b, p1)
	ctx := guard(t)
	g, err := c0.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	if g.Lost == nil {
		t.Fatal("a redis-renew grant has no Lost channel")
	}
	for {
		ok, other := extends(p0.rec.History())
		if len(ok) >= 4 || len(other) > 0 || closed(g.Lost) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d extends in the guard's time", len(ok))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c1.Acquire(ctx, "k0"); !errors.Is(err, ErrBusy) {
		t.Errorf("another client's acquire after 4 extends: want busy, got %v", err)
	}
	if closed(g.Lost) {
		t.Errorf("the lease was reported lost")
	}
	if err := c0.Release(ctx, "k0", g); err != nil {
		t.Errorf("release after 4 extends: %v (the extensions did not keep the lock)", err)
	}
	ops := p0.rec.History()
	if err := history.Validate(ctx, ops); err != nil {
		t.Errorf("the watchdog broke the history: %v", err)
	}
	ok, other := extends(ops)
	if len(ok) < 2 || len(other) > 0 {
		t.Errorf("extends: %d ok, %d not: %+v", len(ok), len(other), other)
	}
	for _, op := range ok {
		if op.LeaseMS == nil || *op.LeaseMS <= 0 || *op.LeaseMS > ttl.Milliseconds() {
			t.Errorf("extend ok with lease %v, want within (0, %d]", op.LeaseMS, ttl.Milliseconds())
		}
	}
	// Released: the watchdog is gone and records nothing more.
	n := len(ops)
	time.Sleep(ttl)
	if m := len(p0.rec.History()); m != n {
		t.Errorf("%d ops recorded after the release", m-n)
	}
}

// TestRenewWatchdogPausedWithClient: the watchdog waits at its process's
// gate, so a paused client stops renewing, the lease expires and another
// client takes the lock; on waking the watchdog finds the token gone,
// records a failed extend and tells the client by closing Lost.
func TestRenewWatchdogPausedWithClient(t *testing.T) {
	const ttl = 300 * time.Millisecond
	b, _ := startRenew(t, ttl)
	p0, p1 := newTestProc(0), newTestProc(1)
	c0, c1 := renewClient(t, b, p0), renewClient(t, b, p1)
	ctx := guard(t)
	g, err := c0.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	p0.env.Gate.Pause()
	time.Sleep(2 * ttl)
	if closed(g.Lost) {
		t.Fatal("Lost closed while the process was paused: the watchdog ran through the pause")
	}
	g1, err := c1.Acquire(ctx, "k0")
	if err != nil {
		t.Fatalf("the paused holder's lease did not expire: %v", err)
	}
	p0.env.Gate.Resume()
	select {
	case <-g.Lost:
	case <-ctx.Done():
		t.Fatal("the woken watchdog never reported the lock lost")
	}
	if err := c0.Release(ctx, "k0", g); !errors.Is(err, ErrNotHeld) {
		t.Errorf("release of the lost lock: want ErrNotHeld, got %v", err)
	}
	if err := c1.Release(ctx, "k0", g1); err != nil {
		t.Errorf("the new holder's release: %v", err)
	}
	ops := p0.rec.History()
	if err := history.Validate(ctx, ops); err != nil {
		t.Errorf("the watchdog broke the history: %v", err)
	}
	_, other := extends(ops)
	if len(other) != 1 || other[0].Type != history.Fail {
		t.Fatalf("want one failed extend, got %+v", other)
	}
	if other[0].Error != ErrNotHeld.Error() {
		t.Errorf("failed extend says %q", other[0].Error)
	}
}

// TestRenewCloseStopsWatchdogs: Close ends a watchdog whose grant was
// never released; it records nothing more and leaves no op open.
func TestRenewCloseStopsWatchdogs(t *testing.T) {
	const ttl = 150 * time.Millisecond
	b, _ := startRenew(t, ttl)
	p0 := newTestProc(0)
	c0 := renewClient(t, b, p0)
	ctx := guard(t)
	if _, err := c0.Acquire(ctx, "k0"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl)
	if err := c0.Close(); err != nil {
		t.Fatal(err)
	}
	n := len(p0.rec.History())
	time.Sleep(ttl)
	ops := p0.rec.History()
	if len(ops) != n {
		t.Errorf("%d ops recorded after Close", len(ops)-n)
	}
	if err := history.Validate(ctx, ops); err != nil {
		t.Errorf("history after Close: %v", err)
	}
	if len(ops) > 0 && ops[len(ops)-1].Type == history.Invoke {
		t.Errorf("an extend was left without its completion: %+v", ops[len(ops)-1])
	}
}
