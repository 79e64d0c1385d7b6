package backends

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFenceCounterExpires: the fence counter a grant writes carries a TTL
// (fenceTTL), so a run killed before its clean-up leaves no key on a Redis
// for ever; a grant's own fence is unchanged.
func TestFenceCounterExpires(t *testing.T) {
	env := Env{Cluster: testCluster(t), TTL: time.Second, OpTimeout: time.Second, Clients: 1, Keys: []string{"k0"}, Seed: 1}
	b, err := newRedisFenced(guard(t), env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	p := newTestProc(0)
	c, err := b.Client(guard(t), p.env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	g, err := c.Acquire(guard(t), "k0")
	if err != nil {
		t.Fatal(err)
	}
	if g.Fence == nil || *g.Fence != 1 {
		t.Errorf("fence %v, want 1", g.Fence)
	}
	rc := redis.NewClient(&redis.Options{Addr: env.Cluster.Servers()[0].Addr()})
	defer rc.Close()
	ttl, err := rc.PTTL(guard(t), "locktorture:fence:k0").Result()
	if err != nil || ttl <= 0 || ttl > fenceTTL {
		t.Errorf("fence counter TTL %v (%v), want up to %v", ttl, err, fenceTTL)
	}
}
