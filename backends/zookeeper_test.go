package backends

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/zookeeper"
	"github.com/locktorture/locktorture/cluster/links"
	"github.com/locktorture/locktorture/internal/leakcheck"
	"github.com/locktorture/locktorture/internal/testenv"
)

// zkTestBackend starts a ZooKeeper of members (links enabled, so faults
// can act on each client's own connections) and the zookeeper backend
// over it with a session timeout of ttl; everything is gone, and checked
// to be gone, when the test ends.
func zkTestBackend(t *testing.T, members int, ttl time.Duration) (*cluster.Cluster, Backend) {
	t.Helper()
	testenv.Require(t, "java")
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		testenv.Missing(t, "zookeeper")
	}
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
		if left := leakcheck.TempDirsLeft(tmp); len(left) > 0 {
			t.Errorf("temporary directories left: %v", left)
		}
	})
	_, factory, err := Lookup("zookeeper")
	if err != nil {
		t.Fatal(err)
	}
	b, err := factory(guard(t), Env{Cluster: cl, TTL: ttl, OpTimeout: 2 * time.Second, Clients: 2, Keys: []string{"k"}, Servers: cluster.StartOptions{Kinds: map[string]cluster.KindOptions{zookeeper.Kind: &zookeeper.Options{Ensemble: cluster.Ensemble{Members: members}}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return cl, b
}

func zkTestClient(t *testing.T, b Backend, p *testProc) Client {
	t.Helper()
	c, err := b.Client(guard(t), p.env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestZooKeeperMutualExclusion: while one client holds a key the other is
// told busy (a certain failure), on 1 and 3 members; after a release the
// other gets it with a higher fence; the lease is the session timeout;
// a second release is ErrNotHeld; Close frees what a client holds.
func TestZooKeeperMutualExclusion(t *testing.T) {
	for _, members := range []int{1, 3} {
		t.Run(map[int]string{1: "one", 3: "three"}[members], func(t *testing.T) {
			cl, b := zkTestBackend(t, members, 2*time.Second)
			ctx := guard(t)
			c0, c1 := zkTestClient(t, b, newTestProc(0)), zkTestClient(t, b, newTestProc(1))
			if members == 1 {
				checkZooKeeperLocked(t, cl, c0)
			}
			var last int64
			for round := range 3 {
				holder, other := c0, c1
				if round%2 == 1 {
					holder, other = c1, c0
				}
				g, err := holder.Acquire(ctx, "k")
				if err != nil {
					t.Fatalf("round %d: acquire: %v", round, err)
				}
				if g.Fence == nil || *g.Fence <= last {
					t.Fatalf("round %d: fence %v, not above %d", round, g.Fence, last)
				}
				last = *g.Fence
				if !g.HasLease || g.Lease <= 0 || g.Lease > 2*time.Second {
					t.Errorf("round %d: lease %v (has %v), want up to the 2s session timeout", round, g.Lease, g.HasLease)
				}
				if _, err := other.Acquire(ctx, "k"); !errors.Is(err, ErrBusy) {
					t.Fatalf("round %d: second acquire while held: %v, want ErrBusy", round, err)
				}
				// The busy attempt left no node behind: the holder's is
				// still the lowest, and releasing it frees the key.
				if err := holder.Release(ctx, "k", g); err != nil {
					t.Fatalf("round %d: release: %v", round, err)
				}
				if err := holder.Release(ctx, "k", g); !errors.Is(err, ErrNotHeld) {
					t.Errorf("round %d: second release: %v, want ErrNotHeld", round, err)
				}
			}
			// A client that closes while holding frees the key at once
			// (its session ends).
			if _, err := c0.Acquire(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			_ = c0.Close()
			if _, err := c1.Acquire(ctx, "k"); err != nil {
				t.Errorf("acquire after the holder closed: %v", err)
			}
		})
	}
}

// TestZooKeeperPauseExpiresSession: a client paused (its gate closed) past
// its session timeout sends no ping, so the servers expire its session and
// delete its lock node: another client gets the lock meanwhile, with a
// higher fence. When the paused client wakes, its grant's Lost closes and
// its release finds the lock gone. A pause shorter than the timeout
// changes nothing (negative control). The 2s session leaves the clients'
// pings (every third of it) over a second to be late by on a loaded
// machine: with 600ms, the other client's own session was lost at load 25
// ("zk: connection closed"), which is not what this test is about.
func TestZooKeeperPauseExpiresSession(t *testing.T) {
	const ttl = 2 * time.Second
	_, b := zkTestBackend(t, 1, ttl)
	ctx := guard(t)
	p0 := newTestProc(0)
	c0, c1 := zkTestClient(t, b, p0), zkTestClient(t, b, newTestProc(1))

	g0, err := c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	p0.env.Gate.Pause()
	time.Sleep(ttl / 3)
	p0.env.Gate.Resume()
	if _, err := c1.Acquire(ctx, "k"); !errors.Is(err, ErrBusy) {
		t.Fatalf("after a short pause: %v, want ErrBusy (the session lives)", err)
	}
	select {
	case <-g0.Lost:
		t.Fatal("a pause shorter than the session timeout lost the lock")
	default:
	}

	p0.env.Gate.Pause()
	var g1 Grant
	for {
		if g1, err = c1.Acquire(ctx, "k"); err == nil {
			break
		}
		if !errors.Is(err, ErrBusy) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		if ctx.Err() != nil {
			t.Fatal("the paused client's session never expired")
		}
	}
	if *g1.Fence <= *g0.Fence {
		t.Errorf("fence after expiry %d, not above the paused holder's %d", *g1.Fence, *g0.Fence)
	}
	select {
	case <-g0.Lost:
		t.Error("the paused client heard of its loss while paused")
	default:
	}
	p0.env.Gate.Resume()
	select {
	case <-g0.Lost:
	case <-ctx.Done():
		t.Fatal("the woken client never saw its connection lost")
	}
	if err := c0.Release(ctx, "k", g0); !errors.Is(err, ErrNotHeld) && Outcome(err) != "info" {
		t.Errorf("release after expiry: %v, want ErrNotHeld (or unknown while reconnecting)", err)
	}
	if err := c1.Release(ctx, "k", g1); err != nil {
		t.Errorf("release by the new holder: %v", err)
	}
}

// TestZooKeeperPartitionSuspends: a holder cut from every server hears
// nothing for two thirds of its session timeout, closes Lost (Curator's
// SUSPENDED: stop work) before the servers expire the session, and only
// then does another client get the lock. The holder's warning and the
// expiry are a third of the session apart: 3s leaves 1s, which a loaded
// machine's stalls do not eat (900ms left 300ms: 234ms were left at load
// 25).
func TestZooKeeperPartitionSuspends(t *testing.T) {
	const ttl = 3 * time.Second
	cl, b := zkTestBackend(t, 3, ttl)
	ctx := guard(t)
	c0, c1 := zkTestClient(t, b, newTestProc(0)), zkTestClient(t, b, newTestProc(1))
	g0, err := c0.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	var handles []func()
	for _, s := range cl.Servers() {
		l, err := cl.Link(links.ClientName(0), s)
		if err != nil || l == nil {
			t.Fatalf("link: %v", err)
		}
		h, err := l.Cut(ctx, links.BothWays)
		if err != nil {
			t.Fatal(err)
		}
		handles = append(handles, func() { _ = l.Heal(ctx, h) })
	}
	cut := time.Now()
	var lostAt time.Time
	for {
		select {
		case <-g0.Lost:
			if lostAt.IsZero() {
				lostAt = time.Now()
			}
		default:
		}
		_, err := c1.Acquire(ctx, "k")
		if err == nil {
			break
		}
		if !errors.Is(err, ErrBusy) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(cut)
	if lostAt.IsZero() {
		t.Fatalf("another client got the lock %v after the cut, and the holder never heard it was suspended", took)
	}
	t.Logf("holder suspended %v after the cut; another client got the lock after %v", lostAt.Sub(cut), took)
	for _, h := range handles {
		h()
	}
}

// checkZooKeeperLocked: the znodes a client of the run makes (the key's
// parent, its lock node) carry the run's digest user's ACL: a client
// without it cannot list, read or delete them; it may still make znodes
// of its own under the shared root (ZooKeeper has no server password).
func checkZooKeeperLocked(t *testing.T, cl *cluster.Cluster, c Client) {
	t.Helper()
	ctx := guard(t)
	z, err := zookeeper.Start(ctx, cl, zookeeper.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a := z.Auth(); a == nil || a.Scheme != "digest" || !strings.HasPrefix(a.Digest, zookeeper.User+":") {
		t.Fatalf("the run's ZooKeeper has no digest user: %+v", a)
	}
	g, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Release(ctx, "k", g) }()
	var addrs []string
	for _, m := range z.Members() {
		addrs = append(addrs, m.Addr())
	}
	stranger, _, err := zk.Connect(addrs, 2*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	parent := zooKeeperLockRoot + "/k"
	for _, tc := range []struct {
		what string
		do   func() error
	}{
		{"list the key's lock nodes", func() error { _, _, err := stranger.Children(parent); return err }},
		{"read the key's node", func() error { _, _, err := stranger.Get(parent); return err }},
		{"delete the key's node", func() error { return stranger.Delete(parent, -1) }},
		{"make a lock node for the key", func() error {
			_, err := stranger.Create(parent+"/lock-0", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
			return err
		}},
		{"list the root", func() error { _, _, err := stranger.Children(zooKeeperLockRoot); return err }},
	} {
		if err := tc.do(); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("a client without the run's user could %s: %v, want %v", tc.what, err, zk.ErrNoAuth)
		}
	}
	if _, err := stranger.Create(zooKeeperLockRoot+"/theirs", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Errorf("another user cannot share the root: %v", err)
	}
}
