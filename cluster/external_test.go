package cluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/locktorture/locktorture/internal/testenv"
)

// TestExternalCleanupTouchesOnlyTheRun: on servers someone else runs, the
// run's namespace is all that Cleanup removes — the owner's keys, another
// run's keys are all still there (etcd's, PostgreSQL's and ZooKeeper's:
// their packages' TestExternalCleanup).
func TestExternalCleanupTouchesOnlyTheRun(t *testing.T) {
	testenv.Require(t, "redis-server")
	ctx := context.Background()
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.StartRedis(ctx, RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{"redis"}
	f, err := parseServersFile(fmt.Appendf(nil, "redis: [%s]\n", r.Addr()), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx, kinds, false); err != nil {
		t.Fatal(err)
	}
	ns := NewNamespace()
	// The owner's data, and another run's, before the run.
	theirs := []string{"user:1", "locktorture:lock:k0", "locktorture:lock:lt00000000:k0", "k0", ns + "-not-a-key"}
	for _, k := range theirs {
		mustRedis(t, r.Addr(), "SET", k, "mine")
	}
	if _, err := f.Prepare(ctx, ns, kinds); err != nil {
		t.Fatal(err)
	}
	// The run's data: keys of its backends and resources.
	ours := []string{"locktorture:lock:" + ns + ":k0", "locktorture:fence:" + ns + ":k12"}
	for _, k := range ours {
		mustRedis(t, r.Addr(), "SET", k, "run")
	}

	if err := f.Cleanup(ctx, ns, kinds); err != nil {
		t.Fatal(err)
	}
	for _, k := range ours {
		if v, _ := redisCall(ctx, r.endpoint(), "EXISTS", k); v != int64(0) {
			t.Errorf("the run's key %s is still there", k)
		}
	}
	for _, k := range theirs {
		if v, _ := redisCall(ctx, r.endpoint(), "GET", k); v != "mine" {
			t.Errorf("the owner's key %s is gone (%v)", k, v)
		}
	}
}

func mustRedis(t *testing.T, addr string, args ...string) {
	t.Helper()
	if _, err := redisCall(context.Background(), Endpoint{Addr: addr}, args...); err != nil {
		t.Fatal(err)
	}
}
