package backends

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/history"
)

// rueidisTest starts one Redis and the named rueidislock row over it.
func rueidisTest(t *testing.T, name string, ttl time.Duration) (Backend, string) {
	t.Helper()
	cl := testCluster(t)
	_, factory, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := factory(guard(t), Env{Cluster: cl, TTL: ttl, OpTimeout: time.Second, Clients: 2, Keys: []string{"k0"}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, b.(*rueidisLockBackend).target.server.Addr()
}

// tryDefinite acquires key until the library answers for certain (a grant
// or a refusal): on a loaded machine a command outlasts the library's
// TryNextAfter (20ms a key, its default, which the rows keep) and the try
// ends "context deadline exceeded", an unknown outcome that says nothing
// of the lock (the library deletes any key it took).
func tryDefinite(ctx context.Context, c Client, key string) (Grant, error) {
	for {
		g, err := c.Acquire(ctx, key)
		if err == nil || Outcome(err) != history.Info || ctx.Err() != nil {
			return g, err
		}
	}
}

func libClient(t *testing.T, b Backend, p *testProc) Client {
	t.Helper()
	c, err := b.Client(guard(t), p.env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// rueidisKeys lists the library's keys of k0 set on the server.
func rueidisKeys(t *testing.T, addr string) []string {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rc.Close()
	keys, err := rc.Keys(context.Background(), "rueidislock:*:k0").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestRueidisLock: for both rows, over a real redis-server with a 2s
// validity: one client holds k0 on as many keys as the row says (3 for the
// default majority of 2, 1 for KeyMajority 1), the other is told busy (a
// certain failure); the library renews the lock by itself, so the holder
// still has it after one and a half validities and the other is still
// refused; a release deletes the keys and lets the other in; deleting the keys
// behind the holder's back cancels its lock (Lost closes, as the README
// claims) and its release is then ErrNotHeld.
func TestRueidisLock(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys int
	}{{"rueidislock", 3}, {"rueidislock-1", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			// The library renews every half validity: 2s leaves it 1s
			// to be late by on a loaded machine (600ms lost the lock
			// at load 25), which is not what this test is about.
			const ttl = 2 * time.Second
			b, addr := rueidisTest(t, tc.name, ttl)
			ctx := guard(t)
			c0, c1 := libClient(t, b, newTestProc(0)), libClient(t, b, newTestProc(1))
			g, err := tryDefinite(ctx, c0, "k0")
			if err != nil {
				t.Fatal(err)
			}
			if !g.HasLease || g.Lease <= 0 || g.Lease > ttl || g.Lost == nil || g.Fence != nil {
				t.Errorf("grant %+v: want a lease up to %v, a Lost channel, no fence", g, ttl)
			}
			// The library sets the keys in the background once a majority
			// is in: wait for all of them.
			for len(rueidisKeys(t, addr)) < tc.keys && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			if got := rueidisKeys(t, addr); len(got) != tc.keys {
				t.Errorf("keys on the server %v, want %d", got, tc.keys)
			}
			if _, err := tryDefinite(ctx, c1, "k0"); !errors.Is(err, ErrBusy) || Outcome(err) != "fail" {
				t.Fatalf("acquire while held: %v, want ErrBusy", err)
			}
			// Past the first validity: held still only if renewed.
			time.Sleep(ttl + ttl/2)
			if closed(g.Lost) {
				t.Fatal("the library gave the lock up while its holder ran")
			}
			if _, err := tryDefinite(ctx, c1, "k0"); !errors.Is(err, ErrBusy) {
				t.Fatalf("acquire after 1.5 validities: %v, want ErrBusy (the library renews)", err)
			}
			if err := c0.Release(ctx, "k0", g); err != nil {
				t.Fatal(err)
			}
			if got := rueidisKeys(t, addr); len(got) != 0 {
				t.Errorf("keys left after the release: %v", got)
			}
			g1, err := tryDefinite(ctx, c1, "k0")
			if err != nil {
				t.Fatalf("acquire after the release: %v", err)
			}
			// Another program deletes the keys: the holder's ctx ends.
			rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
			defer rc.Close()
			for len(rueidisKeys(t, addr)) < tc.keys && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			for i := range tc.keys {
				if err := rc.Del(ctx, fmt.Sprintf("rueidislock:%d:k0", i)).Err(); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-g1.Lost:
			case <-ctx.Done():
				t.Fatal("the lock's context was never cancelled after its keys were deleted")
			}
			if err := c1.Release(ctx, "k0", g1); !errors.Is(err, ErrNotHeld) || !strings.Contains(err.Error(), "cancelled") {
				t.Errorf("release of a lost lock: %v, want ErrNotHeld", err)
			}
		})
	}
}

// TestRueidisLockAcquireKeepsClientContext: the acquire's own context
// ends right after Acquire returns, as the workload's request timeout
// does (cancelled here: a timeout short enough to end first could end the
// acquire itself on a loaded machine); the lock must outlive it (the
// library ends a lock with the context it was taken with). The 2s validity
// leaves the library's renewal (every half validity) 1s to be late by.
func TestRueidisLockAcquireKeepsClientContext(t *testing.T) {
	const ttl = 2 * time.Second
	b, _ := rueidisTest(t, "rueidislock-1", ttl)
	c0, c1 := libClient(t, b, newTestProc(0)), libClient(t, b, newTestProc(1))
	octx, cancel := context.WithCancel(guard(t))
	g, err := tryDefinite(octx, c0, "k0")
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl)
	if closed(g.Lost) {
		t.Fatal("the lock ended with the acquire's context")
	}
	if _, err := tryDefinite(guard(t), c1, "k0"); !errors.Is(err, ErrBusy) {
		t.Errorf("acquire: %v, want ErrBusy", err)
	}
}

// TestLibraryVersion: a library row's version is read from the program's
// build information, never typed: rueidis's is the one go.mod pins.
func TestLibraryVersion(t *testing.T) {
	info, _, err := Lookup("rueidislock")
	if err != nil {
		t.Fatal(err)
	}
	l := info.Library
	if l == nil || l.Language != "Go" || !strings.HasPrefix(l.Name, l.Module) {
		t.Fatalf("library %+v", l)
	}
	// A test binary carries no dependencies in its build information:
	// there the version is unknown, never made up (the built program's
	// is checked in cmd/locktorture's TestLibraryRows).
	want := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok && len(bi.Deps) > 0 {
		want = "v1."
	}
	if v := l.Version(); !strings.HasPrefix(v, want) {
		t.Errorf("version %q, want %s", v, want)
	}
	if v := (Library{Module: "example.com/not/linked"}).Version(); v != "unknown" {
		t.Errorf("a module not linked: %q, want unknown", v)
	}
}
