package backends

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/history"
)

// redis-renew is redis-token plus a lease watchdog, as Redisson's and many
// hand-rolled locks do: while a client holds the lock, a goroutine of its
// own extends the lease every TTL/3 with a compare-and-pexpire script
// (PEXPIRE only if the key still holds our token), recording each try as an
// `extend` op. When an extension fails (the token is gone) or errors, the
// watchdog closes Grant.Lost and the client abandons its critical section.
//
// It guarantees what redis-token does, for as long as the holder keeps
// running: a hold longer than the TTL stays exclusive. It does not survive
// a stop-the-world pause: the watchdog belongs to the paused process and
// freezes with it, the lease expires, another client takes the lock, and
// the paused client wakes still inside its critical section; it only learns
// the lock is gone at the watchdog's next step, after it may already have
// acted (the renew-pause scenario). One server, so a crash or failover
// loses the lock as well. No fence.
func init() {
	Register(Info{
		Name:        "redis-renew",
		Description: "redis-token plus a watchdog that extends the lease every TTL/3 and aborts the work when an extension fails",
		Servers:     "1 redis-server",
		Kinds:       []string{"redis"},
		Sentinel:    true,
		Lease:       true,
		Renews:      true,
	}, newRedisRenew)
}

// extendScript sets a new TTL only when the key still holds our token.
var extendScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("pexpire", KEYS[1], ARGV[2])
end
return 0`)

type redisRenew struct {
	target *redisTarget
	env    Env
}

func newRedisRenew(ctx context.Context, env Env) (Backend, error) {
	t, err := startRedisTarget(ctx, env)
	if err != nil {
		return nil, err
	}
	return &redisRenew{target: t, env: env}, nil
}

func (b *redisRenew) Client(ctx context.Context, c ClientEnv) (Client, error) {
	return &redisRenewClient{
		rc:      b.target.client(ctx, c),
		keys:    b.target.keys,
		ttl:     b.env.TTL,
		timeout: b.env.OpTimeout,
		env:     c,
		ctx:     ctx,
		dogs:    map[string]*watchdog{},
	}, nil
}

func (b *redisRenew) Close() error { return nil }

type redisRenewClient struct {
	rc      *redis.Client
	keys    redisKeys
	ttl     time.Duration
	timeout time.Duration
	env     ClientEnv
	// ctx is the client's own context (the process's lifetime): the
	// watchdogs run and record under it.
	ctx context.Context

	mu   sync.Mutex
	dogs map[string]*watchdog // by token
}

// watchdog keeps one grant's lease alive.
type watchdog struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (c *redisRenewClient) Acquire(ctx context.Context, key string) (Grant, error) {
	start := c.env.Clock.Now()
	token := randomToken()
	if err := c.keys.setNX(ctx, c.rc, key, token, c.ttl); err != nil {
		return Grant{}, err
	}
	g := Grant{Lease: leaseLeft(c.env.Clock, c.ttl, start), HasLease: true, Token: token}
	lost := make(chan struct{})
	g.Lost = lost
	wctx, cancel := context.WithCancel(c.ctx)
	w := &watchdog{cancel: cancel, done: make(chan struct{})}
	c.mu.Lock()
	c.dogs[token] = w
	c.mu.Unlock()
	go func() {
		defer close(w.done)
		c.watch(wctx, key, token, lost)
	}()
	return g, nil
}

// stop ends the watchdog of token, if any, and waits until it is gone.
func (c *redisRenewClient) stop(token string) {
	c.mu.Lock()
	w := c.dogs[token]
	delete(c.dogs, token)
	c.mu.Unlock()
	if w != nil {
		w.cancel()
		<-w.done
	}
}

// watch extends the lease every TTL/3 until ctx ends or an extension
// fails, which closes lost. Every step first waits at the process's gate,
// so a paused process's watchdog is paused too.
func (c *redisRenewClient) watch(ctx context.Context, key, token string, lost chan<- struct{}) {
	every := max(c.ttl/3, time.Millisecond)
	for {
		if c.env.Gate.Sleep(ctx, every) != nil {
			return
		}
		// The extend is one of the process's ops, in the background: it
		// waits until the client's own op (if any) completes, but the
		// client's next op never waits for it (see history.Proc).
		ext, err := c.env.History.InvokeBackground(ctx, history.Op{F: history.Extend, Key: key})
		if err != nil {
			return
		}
		// A pause may have begun while we waited to record: a paused
		// process sends nothing.
		if err := c.env.Gate.Wait(ctx); err != nil {
			_, _ = ext.Complete(history.Op{Type: history.Fail, F: history.Extend, Key: key, Error: "watchdog stopped before sending"})
			return
		}
		start := c.env.Clock.Now()
		err = c.extend(ctx, key, token)
		done := history.Op{Type: Outcome(err), F: history.Extend, Key: key}
		if err == nil {
			done.LeaseMS = history.Int64(leaseLeft(c.env.Clock, c.ttl, start).Milliseconds())
		} else {
			done.Error = err.Error()
			if errors.Is(err, context.DeadlineExceeded) {
				done.Error = "timeout: " + done.Error
			}
		}
		// A completion after the client went on is not recorded (the
		// history has the extend as info): the watchdog goes on by what
		// it learned all the same.
		if _, rerr := ext.Complete(done); rerr != nil && !errors.Is(rerr, history.ErrSuperseded) {
			err = errors.Join(err, rerr)
		}
		if err != nil {
			// Lost, or unknown: either way the client must stop acting as
			// the holder.
			close(lost)
			return
		}
	}
}

// extend runs the compare-and-pexpire script once.
func (c *redisRenewClient) extend(ctx context.Context, key, token string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	n, err := extendScript.Run(ctx, c.rc, []string{c.keys.of(key)}, token, c.ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("extend %s: %w", key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

func (c *redisRenewClient) Release(ctx context.Context, key string, g Grant) error {
	c.stop(g.Token)
	return c.keys.release(ctx, c.rc, key, g.Token)
}

func (c *redisRenewClient) Close() error {
	c.mu.Lock()
	tokens := make([]string, 0, len(c.dogs))
	for t := range c.dogs {
		tokens = append(tokens, t)
	}
	c.mu.Unlock()
	for _, t := range tokens {
		c.stop(t)
	}
	return c.rc.Close()
}
