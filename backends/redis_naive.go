package backends

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// redis-naive is the lock everyone writes first: SET key NX PX ttl, released
// with a plain DEL. It guarantees exclusion only while every holder finishes
// within its TTL; a holder that outlives its lease deletes the next holder's
// lock on release. No fence.
func init() {
	Register(Info{
		Name:        "redis-naive",
		Description: "SET NX PX, released with plain DEL (may delete another client's lock)",
		Servers:     "1 redis-server",
		Kinds:       []string{"redis"},
		Lease:       true,
		Sentinel:    true,
		Options:     newRedisOptions,
	}, newSetNXBackend(plainDelete))
}

// plainDelete releases with DEL, whoever holds the key now.
func plainDelete(k redisKeys, ctx context.Context, rc *redis.Client, key, token string) error {
	n, err := rc.Del(ctx, k.of(key)).Result()
	if err != nil {
		return fmt.Errorf("release %s: %w", key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
