package backends

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/redis"
)

// TestRedisKeysActOnTheirOwnKeys: a backend whose keys have another prefix
// takes, gives back and refuses on its keys only — the default-prefix key
// of the same name is never touched (a give-back once deleted it).
func TestRedisKeysActOnTheirOwnKeys(t *testing.T) {
	c := testCluster(t)
	ctx := context.Background()
	r, err := redis.Start(ctx, c, redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rc := newRedisClient(r.Addr(), cluster.AuthOf(r), time.Second, "")
	defer rc.Close()
	other := redisKeys{Prefix: "elsewhere:"}
	if err := defaultRedisKeys.setNX(ctx, rc, "k", "theirs", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := other.setNX(ctx, rc, "k", "ours", time.Minute); err != nil {
		t.Fatalf("the other prefix's lock is free, but: %v", err)
	}
	if err := other.setNX(ctx, rc, "k", "again", time.Minute); !errors.Is(err, ErrBusy) {
		t.Fatalf("taking a held lock again: %v, want ErrBusy", err)
	}
	if err := other.release(ctx, rc, "k", "theirs"); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("giving back with the other key's token: %v, want ErrNotHeld", err)
	}
	if err := other.release(ctx, rc, "k", "ours"); err != nil {
		t.Fatal(err)
	}
	if n, err := rc.Exists(ctx, "elsewhere:k").Result(); err != nil || n != 0 {
		t.Fatalf("the other prefix's lock: exists %d (%v), want given back", n, err)
	}
	if v, err := rc.Get(ctx, "locktorture:lock:k").Result(); err != nil || v != "theirs" {
		t.Fatalf("the default-prefix lock: %q (%v), want it held by its own token", v, err)
	}
}
