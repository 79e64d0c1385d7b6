package backends

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	rediskind "github.com/locktorture/locktorture/cluster/kinds/redis"
)

// redisLockPrefix namespaces the harness's lock keys in Redis: the
// prefix of every built-in Redis backend (redisKeys).
const redisLockPrefix = "locktorture:lock:"

// redisKeys is how a Redis backend names a lock's key in Redis: Prefix
// and the run's key. Taking, giving back and confirming a lock all use
// it, so a backend whose keys have another shape says so once (its
// redisTarget's keys) and every step acts on its keys.
type redisKeys struct {
	// Prefix comes before the run's key ("locktorture:lock:").
	Prefix string
}

// defaultRedisKeys are the built-in backends' keys.
var defaultRedisKeys = redisKeys{Prefix: redisLockPrefix}

// of is the Redis key of the run's key.
func (k redisKeys) of(key string) string { return k.Prefix + key }

// lockClientOptions are the go-redis settings of every lock client, the
// one place they are written: no retries (a retried SET can run twice, so
// MaxRetries is -1), context deadlines honoured for socket I/O
// (ContextTimeoutEnabled), every timeout the op timeout, and a refused
// connection reported at once rather than redialled for 100ms at a time,
// so a request to a dead server fails certainly within its timeout.
func lockClientOptions(addr string, timeout time.Duration) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		MaxRetries:            -1,
		DialerRetries:         1,
		ContextTimeoutEnabled: true,
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		PoolSize:              2,
		DisableIdentity:       true,
		Protocol:              2,
	}
}

// lockFailoverOptions are lockClientOptions for a Sentinel-managed group.
func lockFailoverOptions(master string, sentinels []string, timeout time.Duration) *redis.FailoverOptions {
	o := lockClientOptions("", timeout)
	return &redis.FailoverOptions{
		MasterName:            master,
		SentinelAddrs:         sentinels,
		MaxRetries:            o.MaxRetries,
		DialerRetries:         o.DialerRetries,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled,
		DialTimeout:           o.DialTimeout,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		PoolSize:              o.PoolSize,
		DisableIdentity:       o.DisableIdentity,
		Protocol:              o.Protocol,
	}
}

// newRedisClient returns a lock client's go-redis client to one server at
// addr (its link) that asks for auth (nil: nothing; its TLS names the
// server: cluster.Auth.WithServerName); its connections carry name
// (rediskind.ClientName: the server's CLIENT LIST shows whose they
// are, and a session kill finds them), none when name is empty.
func newRedisClient(addr string, auth *cluster.Auth, timeout time.Duration, name string) *redis.Client {
	o := lockClientOptions(addr, timeout)
	o.ClientName = name
	if auth != nil {
		o.Username, o.Password = auth.Username, auth.Password
		cfg, err := auth.TLSConfig(addr)
		if err != nil {
			// Every request fails, saying why (the files were checked
			// before the run: this does not happen).
			o.Dialer = func(context.Context, string, string) (net.Conn, error) { return nil, err }
		}
		o.TLSConfig = cfg
	}
	return redis.NewClient(o)
}

// connect makes each client's first connection now, each within timeout,
// so that a lock client is connected (dialled, logged in, named) before
// the run starts, as a service's is before its first lock: a fault from
// the run's first instant then acts on requests, not on the handshake (a
// reply delayed 1s would otherwise cost the three round trips of
// HELLO/AUTH, CLIENT SETNAME and SETINFO before the first SET). A server
// that does not answer is not an error here: the client dials again on its
// first request, as it would have.
func connect(ctx context.Context, timeout time.Duration, cs ...*redis.Client) {
	for _, c := range cs {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		_ = c.Ping(pctx).Err()
		cancel()
	}
}

// serverClient is newRedisClient to server s through process p's link,
// with the credentials s asks for.
func serverClient(env Env, p int, s cluster.Server, timeout time.Duration) *redis.Client {
	return newRedisClient(env.Cluster.ClientAddr(p, s), cluster.AuthOf(s).WithServerName(s.Addr()), timeout, rediskind.ClientName(p))
}

// startOneRedis starts the single redis-server of a single-Redis backend.
func startOneRedis(ctx context.Context, env Env) (*rediskind.Redis, error) {
	r, err := rediskind.Start(ctx, env.Cluster, rediskind.Options{Persistence: env.Servers.Persistence})
	if err != nil {
		return nil, fmt.Errorf("backends: %w", err)
	}
	return r, nil
}

// randomToken returns 16 random bytes in hex, unique to one grant.
func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// releaseScript deletes the lock only when it still holds our token.
var releaseScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("del", KEYS[1])
end
return 0`)

// release runs the compare-and-delete script on key's lock.
func (k redisKeys) release(ctx context.Context, rc *redis.Client, key, token string) error {
	n, err := releaseScript.Run(ctx, rc, []string{k.of(key)}, token).Int()
	if err != nil {
		return fmt.Errorf("release %s: %w", key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// setNX runs SET on key's lock with token NX PX ttl, returning ErrBusy
// when the lock is taken.
func (k redisKeys) setNX(ctx context.Context, rc *redis.Client, key, token string, ttl time.Duration) error {
	ok, err := rc.SetNX(ctx, k.of(key), token, ttl).Result()
	if err != nil {
		return fmt.Errorf("acquire %s: %w", key, err)
	}
	if !ok {
		return ErrBusy
	}
	return nil
}
