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
	}, newRedisToken)
}

type redisToken struct {
	addr string
	env  Env
}

func newRedisToken(ctx context.Context, env Env) (Backend, error) {
	r, err := startOneRedis(ctx, env)
	if err != nil {
		return nil, err
	}
	return &redisToken{addr: r.Addr(), env: env}, nil
}

func (b *redisToken) Client(ctx context.Context, p int, gate *cluster.Gate) (Client, error) {
	return &redisTokenClient{rc: newRedisClient(b.addr, b.env.OpTimeout), ttl: b.env.TTL}, nil
}

func (b *redisToken) Close() error { return nil }

type redisTokenClient struct {
	rc  *redis.Client
	ttl time.Duration
}

func (c *redisTokenClient) Acquire(ctx context.Context, key string) (Grant, error) {
	start := time.Now()
	token := randomToken()
	if err := setNX(ctx, c.rc, key, token, c.ttl); err != nil {
		return Grant{}, err
	}
	return Grant{Lease: leaseLeft(c.ttl, start), HasLease: true, Token: token}, nil
}

func (c *redisTokenClient) Release(ctx context.Context, key string, g Grant) error {
	return redisTokenRelease(ctx, c.rc, key, g.Token)
}

func (c *redisTokenClient) Close() error { return c.rc.Close() }
