// Package locks holds three Redis locks of the kind people write inside
// their services, each tortured by its test with package locktest:
//
//   - TokenLock: SET NX PX with a random token, released by
//     compare-and-delete. Safe until a client pauses past its lease.
//   - WatchdogLock: TokenLock plus a goroutine that renews the lease every
//     third of the TTL. A stop-the-world pause freezes the watchdog too.
//   - FencedLock: every grant carries a fencing token from a counter, so
//     a resource that checks it rejects a stale holder's writes.
package locks

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/locktest"
)

var (
	release = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)
	renew   = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) end return 0`)
	fenced  = redis.NewScript(`if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return redis.call("incr", KEYS[2]) end return 0`)
)

// client connects to the first Redis, logged in with what it asks (the
// servers locktest starts ask for a password of their own, as a
// locktorture run's do).
func client(cfg locktest.Config) *redis.Client {
	cr := cfg.Credentials(locktest.KindRedis, 0)
	return redis.NewClient(&redis.Options{Addr: cfg.Servers.Redis[0], Username: cr.Username, Password: cr.Password,
		MaxRetries: -1, ContextTimeoutEnabled: true,
		DialTimeout: cfg.Timeout, ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout})
}

// lease is how long a client may count on a lock it asked for at start:
// the TTL less the time the request took, less a tenth of the TTL for
// what no clock sees (drift, the time until the caller hears of the grant),
// as Redlock leaves a margin.
func lease(ttl time.Duration, start time.Time) time.Duration {
	return ttl - ttl/10 - time.Since(start)
}

// TokenLock is SET NX PX with a random token, released only by its owner.
type TokenLock struct {
	rdb    *redis.Client
	ttl    time.Duration
	tokens map[string]string
}

// NewTokenLock is TokenLock's locktest constructor.
func NewTokenLock(ctx context.Context, cfg locktest.Config) (locktest.Lock, error) {
	return &TokenLock{rdb: client(cfg), ttl: cfg.TTL, tokens: map[string]string{}}, nil
}

// Acquire takes key once.
func (l *TokenLock) Acquire(ctx context.Context, key string) (locktest.Grant, error) {
	start, token := time.Now(), rand.Text()
	ok, err := l.rdb.SetNX(ctx, key, token, l.ttl).Result()
	switch {
	case err != nil:
		return locktest.Grant{}, err
	case !ok:
		return locktest.Grant{}, locktest.ErrBusy
	}
	l.tokens[key] = token
	return locktest.Grant{Lease: lease(l.ttl, start)}, nil
}

// Release deletes key if it still holds our token.
func (l *TokenLock) Release(ctx context.Context, key string) error {
	token := l.tokens[key]
	delete(l.tokens, key)
	n, err := release.Run(ctx, l.rdb, []string{key}, token).Int()
	if err == nil && n == 0 {
		return locktest.ErrNotHeld
	}
	return err
}

// Close closes the connection.
func (l *TokenLock) Close() error { return l.rdb.Close() }

// WatchdogLock is TokenLock whose lease a goroutine renews every TTL/3
// while the lock is held; when a renewal finds the lock gone, it says so.
type WatchdogLock struct {
	TokenLock
	cfg   locktest.Config
	mu    sync.Mutex
	stop  map[string]chan struct{}
	ended map[string]chan struct{} // closed when key's watchdog returns
}

// NewWatchdogLock is WatchdogLock's locktest constructor.
func NewWatchdogLock(ctx context.Context, cfg locktest.Config) (locktest.Lock, error) {
	return &WatchdogLock{TokenLock: TokenLock{rdb: client(cfg), ttl: cfg.TTL, tokens: map[string]string{}},
		cfg: cfg, stop: map[string]chan struct{}{}, ended: map[string]chan struct{}{}}, nil
}

// Acquire takes key and starts its watchdog.
func (l *WatchdogLock) Acquire(ctx context.Context, key string) (locktest.Grant, error) {
	g, err := l.TokenLock.Acquire(ctx, key)
	if err != nil {
		return g, err
	}
	stop, ended := make(chan struct{}), make(chan struct{})
	l.mu.Lock()
	l.stop[key], l.ended[key] = stop, ended
	l.mu.Unlock()
	go l.watch(key, l.tokens[key], stop, ended)
	return g, nil
}

// watch renews key's lease every TTL/3 until stopped or refused.
func (l *WatchdogLock) watch(key, token string, stop, ended chan struct{}) {
	defer close(ended)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
		start := time.Now()
		n, err := renew.Run(ctx, l.rdb, []string{key}, token, l.ttl.Milliseconds()).Int()
		cancel()
		switch {
		case err != nil:
			l.cfg.Extended(key, 0, err)
		case n == 0:
			l.cfg.Extended(key, 0, locktest.ErrNotHeld)
			l.cfg.Lost(key)
			return
		default:
			l.cfg.Extended(key, lease(l.ttl, start), nil)
		}
	}
}

// Release stops key's watchdog, waits for it (so that no word of this
// grant comes during the next), and deletes key if it is still ours.
func (l *WatchdogLock) Release(ctx context.Context, key string) error {
	l.mu.Lock()
	stop, ended := l.stop[key], l.ended[key]
	delete(l.stop, key)
	delete(l.ended, key)
	l.mu.Unlock()
	if stop != nil {
		close(stop)
		<-ended
	}
	return l.TokenLock.Release(ctx, key)
}

// FencedLock is TokenLock whose grants carry a fencing token: one script
// takes the lock and increments the key's counter.
type FencedLock struct{ TokenLock }

// NewFencedLock is FencedLock's locktest constructor.
func NewFencedLock(ctx context.Context, cfg locktest.Config) (locktest.Lock, error) {
	return &FencedLock{TokenLock{rdb: client(cfg), ttl: cfg.TTL, tokens: map[string]string{}}}, nil
}

// Acquire takes key and returns its fencing token.
func (l *FencedLock) Acquire(ctx context.Context, key string) (locktest.Grant, error) {
	start, token := time.Now(), rand.Text()
	fence, err := fenced.Run(ctx, l.rdb, []string{key, key + ":fence"}, token, l.ttl.Milliseconds()).Int64()
	switch {
	case err == redis.Nil || (err == nil && fence == 0):
		return locktest.Grant{}, locktest.ErrBusy
	case err != nil:
		return locktest.Grant{}, err
	}
	l.tokens[key] = token
	return locktest.Grant{Lease: lease(l.ttl, start), Fence: fence, Fenced: true}, nil
}
