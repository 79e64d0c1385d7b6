package backends

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/clientfault"
)

// redislock is github.com/bsm/redislock, a single-instance Redis lock,
// driven through its public API as a user would: Obtain with the TTL and
// no retry (the workload retries), Release, over one go-redis client per
// process. Underneath it is redis-token: SET NX PX with a random token,
// released by a compare-and-delete script.
//
// It guarantees what redis-token does: a holder that keeps running and
// releases within its TTL has the lock alone, and never deletes another
// client's lock. It does not protect a holder that pauses past its TTL
// (it acts on an expired lock while another client holds it), nor survive
// the server's crash or failover. The lease is the TTL less the time
// Obtain took, by the client's clock. No fence.
func init() {
	Register(Info{
		Name:        "redislock",
		Description: "github.com/bsm/redislock: a single-instance token lock",
		Servers:     "1 redis-server",
		Kinds:       []string{"redis"},
		Sentinel:    true,
		Lease:       true,
		Library:     &Library{Name: "github.com/bsm/redislock", Module: "github.com/bsm/redislock", Language: "Go"},
	}, newRedislock)
}

type redislockBackend struct {
	target *redisTarget
	env    Env
}

func newRedislock(ctx context.Context, env Env) (Backend, error) {
	t, err := startRedisTarget(ctx, env)
	if err != nil {
		return nil, err
	}
	return &redislockBackend{target: t, env: env}, nil
}

func (b *redislockBackend) Client(ctx context.Context, c ClientEnv) (Client, error) {
	rc := b.target.client(ctx, c)
	return &redislockClient{rc: rc, keys: b.target.keys, lc: redislock.New(rc), ttl: b.env.TTL, clock: c.Clock, locks: map[string]*redislock.Lock{}}, nil
}

func (b *redislockBackend) Close() error { return nil }

type redislockClient struct {
	rc    *redis.Client
	keys  redisKeys
	lc    *redislock.Client
	ttl   time.Duration
	clock *clientfault.Clock

	mu    sync.Mutex
	locks map[string]*redislock.Lock // by token
}

func (c *redislockClient) Acquire(ctx context.Context, key string) (Grant, error) {
	start := c.clock.Now()
	l, err := c.lc.Obtain(ctx, c.keys.of(key), c.ttl, nil)
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		return Grant{}, fmt.Errorf("%w: redislock: obtain %s: %w", ErrBusy, key, err)
	case err != nil:
		return Grant{}, fmt.Errorf("redislock: obtain %s: %w", key, err)
	}
	c.mu.Lock()
	c.locks[l.Token()] = l
	c.mu.Unlock()
	return Grant{Lease: leaseLeft(c.clock, c.ttl, start), HasLease: true, Token: l.Token()}, nil
}

func (c *redislockClient) Release(ctx context.Context, key string, g Grant) error {
	c.mu.Lock()
	l := c.locks[g.Token]
	delete(c.locks, g.Token)
	c.mu.Unlock()
	if l == nil {
		return fmt.Errorf("%w: redislock: release %s: no such grant", ErrNotHeld, key)
	}
	err := l.Release(ctx)
	switch {
	case errors.Is(err, redislock.ErrLockNotHeld):
		return fmt.Errorf("%w: redislock: release %s: %w", ErrNotHeld, key, err)
	case err != nil:
		return fmt.Errorf("redislock: release %s: %w", key, err)
	}
	return nil
}

func (c *redislockClient) Close() error { return c.rc.Close() }
