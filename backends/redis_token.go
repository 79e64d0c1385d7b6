package backends

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
)

// redis-token is the single-instance lock the Redis docs recommend: SET key
// token NX PX ttl with a random token, released by a script that deletes the
// key only if it still holds that token. A holder can no longer delete
// someone else's lock, but a holder that pauses past its TTL still believes
// it holds the lock while another client does (Kleppmann's case). No fence.
func init() {
	Register(Info{
		Name:        "redis-token",
		Description: "SET NX PX with a random token, released by an atomic compare-and-delete script",
		Servers:     "1 redis-server",
		Lease:       true,
		Sentinel:    true,
	}, newRedisToken)
}

type redisToken struct {
	target *redisTarget
}

func newRedisToken(ctx context.Context, env Env) (Backend, error) {
	t, err := startRedisTarget(ctx, env)
	if err != nil {
		return nil, err
	}
	return &redisToken{target: t}, nil
}

func (b *redisToken) Client(ctx context.Context, c ClientEnv) (Client, error) {
	return &redisTokenClient{rc: b.target.client(c), target: b.target, ttl: b.target.env.TTL, clock: c.Clock}, nil
}

func (b *redisToken) Close() error { return nil }

type redisTokenClient struct {
	rc     *redis.Client
	target *redisTarget
	ttl    time.Duration
	clock  *cluster.Clock
}

func (c *redisTokenClient) Acquire(ctx context.Context, key string) (Grant, error) {
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

func (c *redisTokenClient) Release(ctx context.Context, key string, g Grant) error {
	return redisTokenRelease(ctx, c.rc, key, g.Token)
}

func (c *redisTokenClient) Close() error { return c.rc.Close() }
