package backends

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
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
		Lease:       true,
		Sentinel:    true,
	}, newRedisNaive)
}

type redisNaive struct {
	target *redisTarget
}

func newRedisNaive(ctx context.Context, env Env) (Backend, error) {
	t, err := startRedisTarget(ctx, env)
	if err != nil {
		return nil, err
	}
	return &redisNaive{target: t}, nil
}

func (b *redisNaive) Client(ctx context.Context, c ClientEnv) (Client, error) {
	return &redisNaiveClient{rc: b.target.client(c), target: b.target, ttl: b.target.env.TTL, clock: c.Clock}, nil
}

func (b *redisNaive) Close() error { return nil }

type redisNaiveClient struct {
	rc     *redis.Client
	target *redisTarget
	ttl    time.Duration
	clock  *cluster.Clock
}

func (c *redisNaiveClient) Acquire(ctx context.Context, key string) (Grant, error) {
	start := c.clock.Now()
	token := randomToken()
	if err := setNX(ctx, c.rc, key, token, c.ttl); err != nil {
		return Grant{}, err
	}
	if err := c.target.confirm(ctx, c.rc, key, token); err != nil {
		return Grant{}, err
	}
	return Grant{Lease: leaseLeft(c.clock, c.ttl, start), HasLease: true, Token: token}, nil
}

func (c *redisNaiveClient) Release(ctx context.Context, key string, g Grant) error {
	n, err := c.rc.Del(ctx, redisKeyPrefix+key).Result()
	if err != nil {
		return fmt.Errorf("release %s: %w", key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

func (c *redisNaiveClient) Close() error { return c.rc.Close() }
