package backends

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/redis"
)

// rueidislock is github.com/redis/rueidis/rueidislock, the lock of the
// rueidis client, driven through its public API as its README shows: a
// Locker per client process (rueidislock.NewLocker over one rueidis
// client), TryWithContext for an acquire (the workload retries; the
// waiting WithContext would wait in the library instead), and the
// returned CancelFunc to release. Everything is at the library's defaults
// but KeyValidity, which is the scenario's TTL (the library extends it
// every ExtendInterval, half of it, by itself).
//
// Two rows: rueidislock, with the default KeyMajority of 2 — the lock is
// held when 2 of 3 keys (rueidislock:0:k, :1:k, :2:k) are set, all three
// on the run's one Redis (or its Sentinel-managed primary), as the library
// places them — and rueidislock-1, with KeyMajority 1 (one key), which the
// README advises "if you have only one Redis instance".
//
// Its claim (README, "Features backed by the Redis Client Side Caching"):
// "The returned ctx will be canceled automatically and immediately once
// the KeyMajority is not held anymore". Grant.Lost is that ctx's Done. A
// key is taken with SET NX PXAT now+validity and extended with PEXPIREAT
// by a script that checks the token; the library cancels the ctx when an
// extension fails or its deadline passes, and on an invalidation of one of
// its keys (client-side caching: the server tells the client when a key
// it read changes or expires).
//
// The context passed to TryWithContext is the client's own, never the
// request's: the library cuts the lock's validity to the context's
// deadline and ends the lock when the context ends, so the request
// timeout would release every lock at 500ms. The request's deadline is
// kept here instead: an acquire that outlives it is reported unknown
// (info) and, should the library grant it later, the lock is given back
// at once.
//
// Release is the CancelFunc: it deletes every key still ours (a script
// comparing the token) and returns when the library's goroutines are
// done; the library reports no outcome, so a release of a lock the
// library had already given up (its ctx ended first) is ErrNotHeld, and
// one that does not return within the request's time is unknown. Lease:
// the validity less the time the acquire took, by the client's clock (the
// library renews past it unseen: no extend op is recorded). No fence.
func init() {
	for _, row := range []struct {
		name     string
		majority int32
		what     string
	}{
		{"rueidislock", 0, "its defaults: 2 of 3 keys"},
		{"rueidislock-1", 1, "KeyMajority 1: one key"},
	} {
		majority := row.majority
		Register(Info{
			Name:         row.name,
			Description:  "github.com/redis/rueidis/rueidislock with " + row.what + ", renewed by the library",
			Servers:      "1 redis-server",
			Kinds:        []string{"redis"},
			Sentinel:     true,
			Lease:        true,
			Library:      &Library{Name: "github.com/redis/rueidis/rueidislock", Module: "github.com/redis/rueidis", Language: "Go"},
			RenewsItself: true,
		}, func(ctx context.Context, env Env) (Backend, error) {
			t, err := startRedisTarget(ctx, env)
			if err != nil {
				return nil, err
			}
			return &rueidisLockBackend{target: t, env: env, majority: majority}, nil
		})
	}
}

type rueidisLockBackend struct {
	target   *redisTarget
	env      Env
	majority int32 // 0: the library's default
}

func (b *rueidisLockBackend) Close() error { return nil }

// clientOption is what a user gives rueidis to reach the run's Redis
// from process ce: the addresses (a Sentinel group's, or the server's),
// credentials, the connection name a session kill finds, and a dialer
// through the process's own links.
func (b *rueidisLockBackend) clientOption(ctx context.Context, ce ClientEnv) rueidis.ClientOption {
	cl := b.env.Cluster
	o := rueidis.ClientOption{ClientName: redis.ClientName(ce.Process)}
	var master *cluster.Auth
	sentinels := map[string]bool{}
	if g := b.target.group; g != nil {
		o.InitAddress = g.SentinelAddrs()
		o.Sentinel = rueidis.SentinelOption{MasterSet: g.MasterName()}
		if len(g.Sentinels) > 0 {
			if a := cluster.AuthOf(g.Sentinels[0]); a != nil {
				o.Sentinel.Username, o.Sentinel.Password = a.Username, a.Password
			}
		}
		for _, a := range g.SentinelAddrs() {
			sentinels[a] = true
		}
		master = g.MasterAuth
	} else {
		o.InitAddress = []string{b.target.server.Addr()}
		master = cluster.AuthOf(b.target.server)
	}
	if master != nil {
		o.Username, o.Password = master.Username, master.Password
	}
	o.DialCtxFn = func(dctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
		// addr is the server's own address (as given, or as the
		// Sentinels name the primary): TLS names it, the link carries it.
		auth := master
		if sentinels[addr] && len(b.target.group.Sentinels) > 0 {
			auth = cluster.AuthOf(b.target.group.Sentinels[0])
		}
		real := addr
		if s := cl.ServerByAddr(addr); s != nil {
			addr = cl.ClientAddr(ce.Process, s)
		}
		conn, err := d.DialContext(dctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return tlsClient(dctx, gateConn(ctx, conn, ce), auth, real)
	}
	return o
}

func (b *rueidisLockBackend) Client(ctx context.Context, ce ClientEnv) (Client, error) {
	life, cancel := context.WithCancel(context.Background())
	locker, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: b.clientOption(life, ce),
		KeyMajority:  b.majority,
		KeyValidity:  b.env.TTL,
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("rueidislock: client %d: %w", ce.Process, err)
	}
	clock := ce.Clock
	if clock == nil {
		clock = clientfault.NewClock()
	}
	return &rueidisLockClient{locker: locker, life: life, cancel: cancel, ttl: b.env.TTL, clock: clock,
		held: map[string]rueidisHold{}}, nil
}

type rueidisLockClient struct {
	locker rueidislock.Locker
	life   context.Context // the locks' context: ends with Close
	cancel context.CancelFunc
	ttl    time.Duration
	clock  *clientfault.Clock

	mu   sync.Mutex
	held map[string]rueidisHold // by token
}

// rueidisHold is one grant: the library's ctx and its CancelFunc.
type rueidisHold struct {
	ctx     context.Context
	release context.CancelFunc
}

func (c *rueidisLockClient) Acquire(ctx context.Context, key string) (Grant, error) {
	start := c.clock.Now()
	type result struct {
		ctx     context.Context
		release context.CancelFunc
		err     error
	}
	ch := make(chan result, 1)
	go func() {
		lctx, release, err := c.locker.TryWithContext(c.life, key)
		ch <- result{lctx, release, err}
	}()
	var r result
	select {
	case r = <-ch:
	case <-ctx.Done():
		go func() {
			// Granted after all: nobody holds it, give it back.
			if r := <-ch; r.err == nil {
				r.release()
			}
		}()
		return Grant{}, fmt.Errorf("rueidislock: acquire %s: %w", key, ctx.Err())
	}
	switch {
	case errors.Is(r.err, rueidislock.ErrNotLocked):
		// Fewer than a majority of keys taken; the library deleted
		// those it took before returning.
		return Grant{}, fmt.Errorf("%w: rueidislock: acquire %s: %w", ErrBusy, key, r.err)
	case r.err != nil:
		return Grant{}, fmt.Errorf("rueidislock: acquire %s: %w", key, r.err)
	}
	token := randomToken()
	c.mu.Lock()
	c.held[token] = rueidisHold{ctx: r.ctx, release: r.release}
	c.mu.Unlock()
	return Grant{Lease: leaseLeft(c.clock, c.ttl, start), HasLease: true, Token: token, Lost: r.ctx.Done()}, nil
}

func (c *rueidisLockClient) Release(ctx context.Context, key string, g Grant) error {
	c.mu.Lock()
	h, ok := c.held[g.Token]
	delete(c.held, g.Token)
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: rueidislock: release %s: no such grant", ErrNotHeld, key)
	}
	lost := h.ctx.Err() != nil // the library gave the lock up first
	done := make(chan struct{})
	go func() {
		h.release()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("rueidislock: release %s: %w", key, ctx.Err())
	}
	if lost {
		return fmt.Errorf("%w: rueidislock: release %s: the library had cancelled the lock's context (%w)", ErrNotHeld, key, context.Cause(h.ctx))
	}
	return nil
}

// Close closes the locker (and its rueidis client): the library deletes
// the keys it still holds as its goroutines end, where it can.
func (c *rueidisLockClient) Close() error {
	c.locker.Close()
	c.cancel()
	return nil
}
