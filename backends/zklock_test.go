package backends

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/leakcheck"
	"github.com/locktorture/locktorture/internal/testenv"
)

// libraryTestBackend starts the servers of backend name (links enabled)
// with the given lease and request timeout; everything is gone, and
// checked to be gone, when the test ends.
func libraryTestBackend(t *testing.T, name string, ttl, timeout time.Duration) Backend {
	t.Helper()
	tmp := t.TempDir()
	cl, err := cluster.New(cluster.Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	cl.EnableLinks()
	t.Cleanup(func() {
		if err := cl.Close(); err != nil {
			t.Errorf("cluster close: %v", err)
		}
		if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
			t.Errorf("servers left running: %v", left)
		}
	})
	_, factory, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := factory(guard(t), Env{Cluster: cl, TTL: ttl, OpTimeout: timeout, Clients: 2, Keys: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// TestZKLock: go-zookeeper's zk.NewLock over a real ZooKeeper. One client
// holds k; the other's acquire waits in line for the request's time and
// ends unknown (info: Lock takes no context and may yet be granted); after
// the release the waiting Lock is granted to nobody and given back, so the
// other client gets k; a client that closes frees what it holds (its
// session ends); a second release is ErrNotHeld. A pause of the holder
// past the session timeout (in-process: its connection waits at the gate)
// lets the session expire and the other client in (each wait bounded as the
// workload bounds it), and the library tells the holder nothing (no Lost
// channel): its release, once it wakes, does not happen (the node is gone,
// or the library is still reconnecting).
func TestZKLock(t *testing.T) {
	testenv.Require(t, "java")
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		testenv.Missing(t, "zookeeper")
	}
	const ttl = 2 * time.Second
	b := libraryTestBackend(t, "zk-lock", ttl, 300*time.Millisecond)
	ctx := guard(t)
	p0 := newTestProc(0)
	c0, c1 := libClient(t, b, p0), libClient(t, b, newTestProc(1))
	g, err := c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if g.Lost != nil || g.Fence != nil || !g.HasLease || g.Lease > ttl {
		t.Errorf("grant %+v: want no Lost, no fence, a lease up to %v", g, ttl)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = c1.Acquire(wctx, "k")
	cancel()
	if err == nil || Outcome(err) != "info" {
		t.Fatalf("acquire while held: %v, want an unknown outcome (the wait timed out)", err)
	}
	if err := c0.Release(ctx, "k", g); err != nil {
		t.Fatal(err)
	}
	if err := c0.Release(ctx, "k", g); !errors.Is(err, ErrNotHeld) {
		t.Errorf("second release: %v, want ErrNotHeld", err)
	}
	g1, err := c1.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("acquire after the release: %v", err)
	}
	if err := c1.Release(ctx, "k", g1); err != nil {
		t.Fatal(err)
	}

	g, err = c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	p0.env.Gate.Pause()
	var got bool
	for deadline := time.Now().Add(3 * ttl); time.Now().Before(deadline) && !got; {
		actx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		if _, err = c1.Acquire(actx, "k"); err == nil {
			got = true
		}
		cancel()
	}
	p0.env.Gate.Resume()
	if !got {
		t.Fatal("the paused holder's session never expired: the other client never got the lock")
	}
	// Woken, the library finds its session expired and reconnects: the
	// release is refused (node gone) or never sent; it did not happen.
	if err := c0.Release(ctx, "k", g); Outcome(err) != "fail" {
		t.Errorf("release after the session expired: %v, want a certain failure", err)
	}
	_ = c1.Close()
	c2 := libClient(t, b, newTestProc(2))
	if _, err := c2.Acquire(ctx, "k"); err != nil {
		t.Errorf("acquire after the holder closed: %v", err)
	}
}
