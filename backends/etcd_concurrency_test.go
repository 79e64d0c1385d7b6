package backends

import (
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locktorture/locktorture/internal/testenv"
)

// TestEtcdConcurrency: etcd's concurrency.Session and Mutex over a real
// etcd with a 1s lease. The other client is told busy while one holds k;
// the library's own keepalive keeps the lock past three lease TTLs; one
// session serves every acquisition (the lock key, named by the lease,
// stays the same); a release lets the other in. A pause of the holder
// (in-process: its connection waits at the gate) stops the keepalive from
// reaching etcd: the lease expires, the other client gets k, and the
// library reports the session done (Lost closes); the next acquire makes
// a new session.
func TestEtcdConcurrency(t *testing.T) {
	testenv.Require(t, "etcd")
	const ttl = time.Second
	b := libraryTestBackend(t, "etcd-concurrency", ttl, 500*time.Millisecond)
	ctx := guard(t)
	p0 := newTestProc(0)
	c0, c1 := libClient(t, b, p0), libClient(t, b, newTestProc(1))
	g, err := c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if g.Lost == nil || !g.HasLease || g.Lease > ttl || g.Fence != nil {
		t.Errorf("grant %+v: want a Lost channel, a lease up to %v, no fence", g, ttl)
	}
	if _, err := c1.Acquire(ctx, "k"); !errors.Is(err, ErrBusy) || !errors.Is(err, concurrency.ErrLocked) {
		t.Fatalf("acquire while held: %v, want ErrBusy", err)
	}
	time.Sleep(3 * ttl)
	if closed(g.Lost) {
		t.Fatal("the session ended while its holder ran")
	}
	if _, err := c1.Acquire(ctx, "k"); !errors.Is(err, ErrBusy) {
		t.Fatalf("acquire after three TTLs: %v, want ErrBusy (the library keeps the lease alive)", err)
	}
	if err := c0.Release(ctx, "k", g); err != nil {
		t.Fatal(err)
	}
	again, err := c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if again.Token != g.Token {
		t.Errorf("lock key %s, then %s: one session should serve both", g.Token, again.Token)
	}
	if err := c0.Release(ctx, "k", again); err != nil {
		t.Fatal(err)
	}

	g, err = c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	p0.env.Gate.Pause()
	var got bool
	for deadline := time.Now().Add(6 * ttl); time.Now().Before(deadline) && !got; time.Sleep(50 * time.Millisecond) {
		if g1, err := c1.Acquire(ctx, "k"); err == nil {
			got = true
			defer func() { _ = c1.Release(ctx, "k", g1) }()
		}
	}
	p0.env.Gate.Resume()
	if !got {
		t.Fatal("the paused holder's lease never expired: the other client never got the lock")
	}
	select {
	case <-g.Lost:
	case <-ctx.Done():
		t.Fatal("the library never reported the session done")
	}
	g2, err := c0.Acquire(ctx, "k")
	if !errors.Is(err, ErrBusy) {
		t.Errorf("acquire on a new session while the other holds: %v, %+v, want ErrBusy", err, g2)
	}
}
