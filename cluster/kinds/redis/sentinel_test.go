package redis

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/links"
	"github.com/locktorture/locktorture/internal/testenv"

	"github.com/locktorture/locktorture/internal/leakcheck"
)

// TestSentinelFailover: the replica never gets a key written while
// replication is cut; the primary dies; Sentinel promotes the replica,
// which has no such key — the failover race in the Redis docs. The group
// is locked (the run's password) and speaks TLS only (the run's CA):
// Sentinels, primary and replica refuse a client without the password or
// without TLS, and replication, Sentinel and the failover work with both.
func TestSentinelFailover(t *testing.T) {
	testenv.Require(t, "redis-sentinel")
	ctx := context.Background()
	tmp := t.TempDir()
	c, err := cluster.New(cluster.Options{TempDir: tmp, Locked: true, TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.EnableLinks()
	g, err := StartSentinelGroup(ctx, c, false)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := g.PrimaryAddr(ctx); err != nil || a != g.Primary.Addr() {
		t.Fatalf("primary %s (%v), want %s", a, err, g.Primary.Addr())
	}
	for _, s := range []cluster.Server{g.Primary, g.Replica, g.Sentinels[0]} {
		if cluster.AuthOf(s) == nil {
			t.Fatalf("%s asks for no password", s.Name())
		}
		cmd := "FLUSHALL"
		if s.(cluster.Kinded).Kind() == SentinelKind {
			cmd = "PING"
		}
		tlsOnly := &cluster.Auth{TLS: cluster.AuthOf(s).TLS}
		if tlsOnly.TLS == nil {
			t.Fatalf("%s speaks no TLS", s.Name())
		}
		if _, err := redisCall(ctx, cluster.Endpoint{Addr: s.Addr(), Auth: tlsOnly}, cmd); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			t.Errorf("%s: %s without the password: %v, want NOAUTH", s.Name(), cmd, err)
		}
		if _, err := redisCall(ctx, cluster.Endpoint{Addr: s.Addr(), Auth: &cluster.Auth{Password: "wrong-password", TLS: tlsOnly.TLS}}, "PING"); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("%s: a wrong password: %v, want WRONGPASS", s.Name(), err)
		}
		plain := *cluster.AuthOf(s)
		plain.TLS = nil
		if v, err := redisCall(ctx, cluster.Endpoint{Addr: s.Addr(), Auth: &plain}, "PING"); err == nil {
			t.Errorf("%s answered %v without TLS", s.Name(), v)
		}
	}
	if _, err := redisCall(ctx, endpoint(g.Primary), "SET", "before", "1"); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitFor(ctx, 5*time.Second, func() error {
		v, err := redisCall(ctx, endpoint(g.Replica), "GET", "before")
		if err != nil || v == nil {
			return errNotYet
		}
		return nil
	}); err != nil {
		t.Fatal("replication does not work before the cut")
	}
	if _, err := g.Replication.Cut(ctx, links.BothWays); err != nil {
		t.Fatal(err)
	}
	if _, err := redisCall(ctx, endpoint(g.Primary), "SET", "lock", "mine"); err != nil {
		t.Fatal(err)
	}
	if err := g.Primary.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cluster.WaitFor(ctx, 30*time.Second, func() error {
		a, err := g.PrimaryAddr(ctx)
		if err != nil || a != g.Replica.Addr() {
			return errNotYet
		}
		return nil
	}); err != nil {
		t.Fatal("Sentinel never promoted the replica")
	}
	t.Logf("promoted after %s", time.Since(start).Round(time.Millisecond))
	if v, err := redisCall(ctx, endpoint(g.Replica), "GET", "lock"); err != nil || v != nil {
		t.Errorf("the promoted replica has the lock (%v, %v); it should never have got it", v, err)
	}
	if err := g.Primary.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}

var errNotYet = context.DeadlineExceeded

// TestForceFailoverAtOnce: a forced failover right after the group
// starts promotes the replica (every Sentinel sees it ready before
// StartSentinelGroup returns: one that had only heard of it answered
// NOGOODSLAVE, and the group failed over seconds later by itself).
func TestForceFailoverAtOnce(t *testing.T) {
	testenv.Require(t, "redis-sentinel")
	ctx := context.Background()
	c, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g, err := StartSentinelGroup(ctx, c, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Primary.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.ForceFailover(ctx); err != nil {
		t.Fatalf("forced failover right after the start: %v", err)
	}
	if err := cluster.WaitFor(ctx, 10*time.Second, func() error {
		if a, err := g.PrimaryAddr(ctx); err != nil || a != g.Replica.Addr() {
			return fmt.Errorf("primary %s (%v), want the replica %s", a, err, g.Replica.Addr())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
