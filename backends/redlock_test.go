package backends

import (
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/tcpdelay"
)

// startRedlock starts the 5 nodes of a redlock backend.
func startRedlock(t *testing.T, ttl, opTimeout time.Duration) (*redlock, Env) {
	t.Helper()
	env := Env{Cluster: testCluster(t), TTL: ttl, OpTimeout: opTimeout, Clients: 2, Keys: []string{"k0"}, Seed: 1}
	b, err := newRedlock(guard(t), env)
	if err != nil {
		t.Fatal(err)
	}
	return b.(*redlock), env
}

// proxied puts a delaying proxy in front of the nodes listed in slow and
// returns every node's address for a client.
func proxied(t *testing.T, servers []*redis.Redis, slow ...int) ([]string, []*tcpdelay.Proxy) {
	t.Helper()
	addrs := make([]string, len(servers))
	var proxies []*tcpdelay.Proxy
	for i, s := range servers {
		addrs[i] = s.Addr()
	}
	for _, i := range slow {
		p, err := tcpdelay.New(servers[i].Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		addrs[i] = p.Addr()
		proxies = append(proxies, p)
	}
	return addrs, proxies
}

// TestRedlockRefusesLateQuorum: the SETs to 3 of the 5 nodes are held in
// the network for longer than the TTL, so a quorum says yes only after the
// lease has run out. With a per-node timeout generous enough to wait for
// them (as a user may configure), it is the validity check that must
// refuse the lock — a certain failure, since every node answered — and
// release it everywhere: the 3 late keys, set with a full TTL to live, are
// gone when Acquire returns, and another client gets the lock at once.
func TestRedlockRefusesLateQuorum(t *testing.T) {
	const ttl = time.Second
	b, _ := startRedlock(t, ttl, 10*time.Second)
	addrs, slow := proxied(t, b.servers, 2, 3, 4)
	c := newRedlockClient(addrs, nil, ttl, 10*time.Second, clientfault.NewClock(), "")
	defer c.Close()
	c.nodeTimeout = 10 * time.Second
	ctx := guard(t)

	// Through the proxies, undelayed, the lock works (and the connections
	// are open, so the next request on each is the SET).
	g, err := c.Acquire(ctx, "k0")
	if err != nil {
		t.Fatalf("acquire through idle proxies: %v", err)
	}
	if err := c.Release(ctx, "k0", g); err != nil {
		t.Fatalf("release: %v", err)
	}

	for _, p := range slow {
		p.DelayNext(tcpdelay.Up, ttl+300*time.Millisecond)
	}
	start := time.Now()
	g, err = c.Acquire(ctx, "k0")
	took := time.Since(start)
	if err == nil {
		t.Fatalf("a quorum reached after %s was granted with lease %s (ttl %s)", took, g.Lease, ttl)
	}
	if took < ttl {
		t.Fatalf("the acquire took %s, not longer than the ttl: the proxies did not hold the SETs", took)
	}
	if got := Outcome(err); got != history.Fail {
		t.Errorf("every node answered and the lock was released: want a certain fail, got %s (%v)", got, err)
	}
	if !strings.Contains(err.Error(), "no validity left") {
		t.Errorf("error does not say why: %v", err)
	}
	for i, s := range b.servers {
		if keyExists(t, s.Addr(), "k0") {
			t.Errorf("node %c still holds the refused lock", 'a'+i)
		}
	}
	other := newRedlockClient(addrs, nil, ttl, 10*time.Second, clientfault.NewClock(), "")
	defer other.Close()
	if _, err := other.Acquire(ctx, "k0"); err != nil {
		t.Errorf("after the refusal the lock is not free: %v", err)
	}
}

// TestRedlockSlowNodesTimeOut: with the default per-node timeout, replies
// held past it do not count; with 3 of 5 nodes slow there is no quorum,
// and since those nodes may have set the key the acquire is unknown
// (info), never ok.
func TestRedlockSlowNodesTimeOut(t *testing.T) {
	const ttl = time.Second
	b, env := startRedlock(t, ttl, 500*time.Millisecond)
	addrs, slow := proxied(t, b.servers, 0, 1, 2)
	c := newRedlockClient(addrs, nil, ttl, env.OpTimeout, clientfault.NewClock(), "")
	defer c.Close()
	if c.nodeTimeout >= ttl {
		t.Fatalf("per-node timeout %s is not small against the ttl %s", c.nodeTimeout, ttl)
	}
	for _, p := range slow {
		p.SetDelay(tcpdelay.Down, ttl)
	}
	g, err := c.Acquire(guard(t), "k0")
	if err == nil {
		t.Fatalf("granted with 3 of 5 nodes timing out (lease %s)", g.Lease)
	}
	if got := Outcome(err); got != history.Info {
		t.Errorf("timed-out nodes may hold the key: want info, got %s (%v)", got, err)
	}
}

// TestQuorumNodesDown: the Redlock family keeps granting with 2 of 5
// servers killed (with a lease below the TTL), and refuses — a certain
// failure, the dead nodes refuse connections — with 3 of 5 down.
func TestQuorumNodesDown(t *testing.T) {
	for _, name := range []string{"redlock", "redsync"} {
		t.Run(name, func(t *testing.T) {
			const ttl = 2 * time.Second
			_, factory, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			env := Env{Cluster: testCluster(t), TTL: ttl, OpTimeout: time.Second, Clients: 2, Keys: []string{"k0"}, Seed: 1}
			ctx := guard(t)
			b, err := factory(ctx, env)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			servers := redis.Servers(env.Cluster)
			if len(servers) != 5 {
				t.Fatalf("%d servers, want 5", len(servers))
			}
			newClient := func(p int) Client {
				c, err := b.Client(ctx, newTestProc(p).env)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Close() })
				return c
			}
			c := newClient(0)
			cycle := func(c Client, what string) {
				t.Helper()
				g, err := c.Acquire(ctx, "k0")
				if err != nil {
					t.Fatalf("%s: acquire: %v", what, err)
				}
				if !g.HasLease || g.Lease <= 0 || g.Lease >= ttl {
					t.Errorf("%s: lease %s, want within (0, %s)", what, g.Lease, ttl)
				}
				if err := c.Release(ctx, "k0", g); err != nil {
					t.Errorf("%s: release: %v", what, err)
				}
			}
			cycle(c, "5 of 5 up")
			for _, s := range servers[:2] {
				if err := s.Kill(ctx); err != nil {
					t.Fatal(err)
				}
			}
			cycle(c, "2 of 5 down")
			cycle(newClient(1), "2 of 5 down, new client")
			// A second client cannot take it while the first holds it.
			g, err := c.Acquire(ctx, "k0")
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			if _, err := newClient(2).Acquire(ctx, "k0"); Outcome(err) != history.Fail {
				t.Errorf("a second client's acquire while held: want a certain fail, got %v", err)
			}
			if err := c.Release(ctx, "k0", g); err != nil {
				t.Errorf("release: %v", err)
			}

			if err := servers[2].Kill(ctx); err != nil {
				t.Fatal(err)
			}
			g, err = newClient(3).Acquire(ctx, "k0")
			if err == nil {
				t.Fatalf("granted with 3 of 5 down (lease %s)", g.Lease)
			}
			if got := Outcome(err); got != history.Fail {
				t.Errorf("3 of 5 refuse connections: want a certain fail, got %s (%v)", got, err)
			}
			if _, err := c.Acquire(ctx, "k0"); err == nil {
				t.Errorf("granted with 3 of 5 down to a client that had used them")
			}
		})
	}
}

// TestRedlockValidityFromClientClock: the validity is reckoned with the
// client's own clock; a clock that jumps forward during the acquire leaves
// no validity, so the grant is refused.
func TestRedlockValidityFromClientClock(t *testing.T) {
	const ttl = time.Second
	b, env := startRedlock(t, ttl, time.Second)
	clock := clientfault.NewClock()
	addrs := make([]string, len(b.servers))
	for i, s := range b.servers {
		addrs[i] = env.Cluster.ClientAddr(0, s)
	}
	c := newRedlockClient(addrs, nil, ttl, env.OpTimeout, clock, "")
	defer c.Close()
	ctx := guard(t)
	g, err := c.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	if max := ttl - c.drift; g.Lease > max || g.Lease <= 0 {
		t.Errorf("lease %s, want within (0, ttl - drift = %s]", g.Lease, max)
	}
	if err := c.Release(ctx, "k0", g); err != nil {
		t.Fatal(err)
	}
	clock.SetRate(1e6) // a second of clock for each real microsecond
	if g, err := c.Acquire(ctx, "k0"); err == nil {
		t.Errorf("granted with lease %s although the client's clock ran past the ttl", g.Lease)
	}
	clock.Reset()
	if _, err := c.Acquire(ctx, "k0"); err != nil {
		t.Errorf("the refused acquire left the lock taken: %v", err)
	}
}
