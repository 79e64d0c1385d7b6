package backends

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	rediskind "github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/history"
)

// redsync is github.com/go-redsync/redsync/v4, the popular Go Redlock,
// driven through its public API as a user would: one go-redis client per
// server wrapped in its goredis/v9 pool, 5 independent redis-servers, a
// Mutex per key with expiry = TTL and tries = 1 (the workload retries),
// everything else at the library's defaults (drift factor 0.01, per-node
// timeout 5% of the expiry). The lease is the library's own validity
// (Mutex.Until), which it reckons with the machine's clock (time.Now), not
// the simulated client clock: a clock nemesis does not move it.
//
// It guarantees and fails to guarantee what our redlock does (see
// redlock.go): a majority quorum with a validity check, so mutual exclusion
// only under bounded delays, pauses and clock drift, and a stale holder
// after a pause or a server that forgets its keys. No fence.
func init() {
	Register(Info{
		Name:        "redsync",
		Description: "github.com/go-redsync/redsync/v4, the popular Go Redlock, over 5 Redis servers",
		Servers:     "5 redis-server",
		Kinds:       []string{"redis"},
		Counts:      map[string]int{"redis": redlockNodes},
		Lease:       true,
		Library:     &Library{Name: "github.com/go-redsync/redsync/v4", Module: "github.com/go-redsync/redsync/v4", Language: "Go"},
	}, newRedsync)
}

type redsyncBackend struct {
	servers []*rediskind.Redis
	env     Env
}

func newRedsync(ctx context.Context, env Env) (Backend, error) {
	s, err := startRedisNodes(ctx, env, redlockNodes)
	if err != nil {
		return nil, err
	}
	return &redsyncBackend{servers: s, env: env}, nil
}

func (b *redsyncBackend) Client(ctx context.Context, c ClientEnv) (Client, error) {
	rc := &redsyncClient{keys: defaultRedisKeys, ttl: b.env.TTL, mutexes: map[string]*redsync.Mutex{}}
	for _, s := range b.servers {
		rc.conns = append(rc.conns, serverClient(b.env, c.Process, s, b.env.OpTimeout))
	}
	connect(ctx, b.env.OpTimeout, rc.conns...)
	rc.rs = newRedsyncOver(rc.conns)
	return rc, nil
}

// newRedsyncOver builds a Redsync over go-redis clients, one pool each.
func newRedsyncOver(conns []*redis.Client) *redsync.Redsync {
	pools := make([]redsyncredis.Pool, 0, len(conns))
	for _, c := range conns {
		pools = append(pools, goredis.NewPool(c))
	}
	return redsync.New(pools...)
}

func (b *redsyncBackend) Close() error { return nil }

type redsyncClient struct {
	conns []*redis.Client
	keys  redisKeys
	rs    *redsync.Redsync
	ttl   time.Duration

	mu      sync.Mutex
	mutexes map[string]*redsync.Mutex // a user's mutex per key, reused
}

func (c *redsyncClient) mutex(key string) *redsync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.mutexes[key]
	if !ok {
		m = c.rs.NewMutex(c.keys.of(key), redsync.WithExpiry(c.ttl), redsync.WithTries(1))
		c.mutexes[key] = m
	}
	return m
}

func (c *redsyncClient) Acquire(ctx context.Context, key string) (Grant, error) {
	m := c.mutex(key)
	if err := m.LockContext(ctx); err != nil {
		return Grant{}, redsyncError("acquire", key, err, ErrBusy)
	}
	return Grant{Lease: max(time.Until(m.Until()), 0), HasLease: true, Token: m.Value()}, nil
}

func (c *redsyncClient) Release(ctx context.Context, key string, g Grant) error {
	m := c.mutex(key)
	if m.Value() != g.Token {
		return fmt.Errorf("%w: redsync: release %s: the mutex holds another grant", ErrNotHeld, key)
	}
	ok, err := m.UnlockContext(ctx)
	if ok {
		return nil
	}
	if err == nil {
		err = errors.New("no quorum")
	}
	return redsyncError("release", key, err, ErrNotHeld)
}

func (c *redsyncClient) Close() error {
	var errs []error
	for _, rc := range c.conns {
		errs = append(errs, rc.Close())
	}
	return errors.Join(errs...)
}

// redsyncError maps an error of redsync honestly: no is returned (wrapping
// err) only when every node's part is a certain "no" — the lock taken on a
// quorum, or per node taken, expired or refused; a connection refused on
// every failing node is a certain failure; anything a node may have done
// (a timeout, a lost connection) leaves the outcome unknown. ErrFailed
// after one try means a quorum said yes too late and the library released
// it without saying whether that worked: unknown too.
func redsyncError(op, key string, err error, no error) error {
	wrapped := fmt.Errorf("redsync: %s %s: %w", op, key, err)
	var taken *redsync.ErrTaken
	if errors.As(err, &taken) {
		return fmt.Errorf("%w: %w", no, wrapped)
	}
	if errors.Is(err, redsync.ErrFailed) {
		return wrapped
	}
	var anyNo bool
	for _, e := range joined(err) {
		var nodeTaken *redsync.ErrNodeTaken
		var redisErr *redsync.RedisError
		switch {
		case errors.As(e, &nodeTaken), errors.Is(e, redsync.ErrLockAlreadyExpired):
			anyNo = true
		case errors.As(e, &redisErr) && Outcome(redisErr.Err) == history.Fail:
		default:
			return wrapped
		}
	}
	if anyNo {
		return fmt.Errorf("%w: %w", no, wrapped)
	}
	return Certain(wrapped)
}

// joined flattens the errors that errors.Join nested (redsync joins one
// node's error at a time).
func joined(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, joined(e)...)
	}
	return out
}
