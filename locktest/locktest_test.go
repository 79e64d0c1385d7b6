package locktest_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/locktest"
)

func TestMain(m *testing.M) { locktest.Main(m) }

// tokenLock is SET NX PX with a random token, released by compare-and-delete.
type tokenLock struct {
	rdb   *redis.Client
	cfg   locktest.Config
	token string
}

var del = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

func newTokenLock(ctx context.Context, cfg locktest.Config) (locktest.Lock, error) {
	rdb := redis.NewClient(&redis.Options{Addr: cfg.Servers.Redis[0], MaxRetries: -1, ContextTimeoutEnabled: true})
	return &tokenLock{rdb: rdb, cfg: cfg}, nil
}

func (l *tokenLock) Acquire(ctx context.Context, key string) (locktest.Grant, error) {
	l.token = rand.Text()
	ok, err := l.rdb.SetNX(ctx, key, l.token, l.cfg.TTL).Result()
	if err == nil && !ok {
		err = locktest.ErrBusy
	}
	return locktest.Grant{Lease: l.cfg.TTL}, err
}

func (l *tokenLock) Release(ctx context.Context, key string) error {
	n, err := del.Run(ctx, l.rdb, []string{key}, l.token).Int()
	if err == nil && n == 0 {
		err = locktest.ErrNotHeld
	}
	return err
}

func (l *tokenLock) Close() error { return l.rdb.Close() }

// TestTokenLock: baseline passes the claim; under Kleppmann's pause the
// token lock shows a stale holder, so the claim "safe" fails (less safe)
// and "stale holder possible" holds.
func TestTokenLock(t *testing.T) {
	res := locktest.Run(t, locktest.Suite{New: newTokenLock, Claim: locktest.StaleHolderPossible,
		Scenarios: []string{"baseline", "kleppmann-pause"}})
	if res[1] == nil {
		return // skipped: no servers here
	}
	ok, why := res[1].Meets(locktest.Safe)
	if ok || !strings.HasPrefix(why, "less safe than the claim \"safe\"") {
		t.Errorf("kleppmann-pause judged against the claim safe: met %v, %q; want it failed as less safe", ok, why)
	}
	if ok, why := res[0].Meets(locktest.Safe); !ok {
		t.Errorf("baseline judged against the claim safe: %s", why)
	}
}
