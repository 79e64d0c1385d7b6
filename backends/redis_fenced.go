package backends

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/clientfault"
)

// redis-fenced is redis-token plus a fencing token: one script takes the
// lock with SET NX PX and, only when it got it, INCRs a per-key counter, so
// every grant carries a number larger than every earlier grant's. The lock
// itself is no safer (a paused holder still outlives its lease), but a
// resource that checks the fence can reject the stale holder's writes. The
// fence is the counter value; it lives on the same single server, so it is
// only as durable as that server.
func init() {
	Register(Info{
		Name:        "redis-fenced",
		Description: "one script does SET NX PX and INCR of a per-key counter: every grant carries a fencing token",
		Servers:     "1 redis-server",
		Kinds:       []string{"redis"},
		Fencing:     true,
		Lease:       true,
		Sentinel:    true,
		Options:     func() Options { return &FencedOptions{} },
	}, newRedisFenced)
}

// FencedOptions are redis-fenced's backend_options: the single-Redis
// backends' own, and where its counter starts.
type FencedOptions struct {
	RedisOptions `yaml:",inline"`
	// FenceStart is where a key's counter starts: its first grant carries
	// FenceStart+1 (kleppmann-fenced starts at 32, so its tokens are
	// Kleppmann's 33 and 34).
	FenceStart int64 `yaml:"fence_start"`
}

// Validate refuses a negative start.
func (o *FencedOptions) Validate(env Env) error {
	if o.FenceStart < 0 {
		return fmt.Errorf("fence_start must be 0 or more, not %d", o.FenceStart)
	}
	return o.RedisOptions.Validate(env)
}

// fencedAcquireScript returns the new fence, or 0 when the lock is busy. A
// key's counter starts at ARGV[3] (the scenario's fence_start), so its first
// grant carries ARGV[3]+1; a server that lost its keys starts it there again.
// Each grant sets the counter's TTL to ARGV[4] (fenceTTL), so a run killed
// before its clean-up leaves no key for ever on someone else's Redis, while
// a counter in use never expires.
var fencedAcquireScript = redis.NewScript(`
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  redis.call("set", KEYS[2], ARGV[3], "NX")
  local f = redis.call("incr", KEYS[2])
  redis.call("pexpire", KEYS[2], ARGV[4])
  return f
end
return 0`)

// fenceTTL is how long a fence counter outlives its last grant.
const fenceTTL = 24 * time.Hour

type redisFenced struct {
	target     *redisTarget
	fenceStart int64
}

func newRedisFenced(ctx context.Context, env Env) (Backend, error) {
	t, err := startRedisTarget(ctx, env)
	if err != nil {
		return nil, err
	}
	return &redisFenced{target: t, fenceStart: envOptions(env, &FencedOptions{}).FenceStart}, nil
}

func (b *redisFenced) Client(ctx context.Context, c ClientEnv) (Client, error) {
	return &redisFencedClient{rc: b.target.client(ctx, c), target: b.target, ttl: b.target.env.TTL, clock: c.Clock, fenceStart: b.fenceStart}, nil
}

func (b *redisFenced) Close() error { return nil }

type redisFencedClient struct {
	rc         *redis.Client
	target     *redisTarget
	ttl        time.Duration
	clock      *clientfault.Clock
	fenceStart int64
}

func (c *redisFencedClient) Acquire(ctx context.Context, key string) (Grant, error) {
	start := c.clock.Now()
	token := randomToken()
	keys := []string{c.target.keys.of(key), "locktorture:fence:" + key}
	fence, err := fencedAcquireScript.Run(ctx, c.rc, keys, token, c.ttl.Milliseconds(), c.fenceStart, fenceTTL.Milliseconds()).Int64()
	if err != nil {
		return Grant{}, fmt.Errorf("acquire %s: %w", key, err)
	}
	if fence == 0 {
		return Grant{}, ErrBusy
	}
	if err := c.target.confirm(ctx, c.rc, key, token); err != nil {
		return Grant{}, err
	}
	return Grant{Fence: &fence, Lease: leaseLeft(c.clock, c.ttl, start), HasLease: true, Token: token}, nil
}

func (c *redisFencedClient) Release(ctx context.Context, key string, g Grant) error {
	return c.target.keys.release(ctx, c.rc, key, g.Token)
}

func (c *redisFencedClient) Close() error { return c.rc.Close() }
