package backends

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	rediskind "github.com/locktorture/locktorture/cluster/kinds/redis"
)

// Redis setups a single-Redis backend can run over (Env.Redis).
const (
	// RedisSingle is one redis-server.
	RedisSingle = "single"
	// RedisSentinel is a primary, a replica and three Sentinels; clients
	// use go-redis's FailoverClient, which asks the Sentinels for the
	// primary.
	RedisSentinel = "sentinel"
)

// redisTarget is where a single-Redis backend keeps its locks: one server,
// or a Sentinel group.
type redisTarget struct {
	env    Env
	opt    RedisOptions
	server *rediskind.Redis
	group  *rediskind.SentinelGroup
	// keys name the locks' keys in Redis (defaultRedisKeys).
	keys redisKeys
}

// RedisOptions are the backend_options of the single-Redis backends
// that WAIT for replicas (redis-naive, redis-token; redis-fenced adds its
// own). redis-renew and redislock take none: they never WAIT.
type RedisOptions struct {
	// WaitReplicas, when positive, makes the backend WAIT for that many
	// replicas after acquiring, failing the acquire on a short count
	// (needs `redis: sentinel`: there is no replica otherwise).
	WaitReplicas int `yaml:"wait_replicas"`
}

// Validate refuses a negative count, and replicas without Sentinel.
func (o *RedisOptions) Validate(env Env) error {
	if o.WaitReplicas < 0 || (o.WaitReplicas > 0 && !env.Servers.Sentinel) {
		return fmt.Errorf("wait_replicas needs `redis: sentinel` (there is no replica otherwise) and a count of 0 or more, not %d", o.WaitReplicas)
	}
	return nil
}

// redisOptions is what the single-Redis backends' options have in common.
func (o *RedisOptions) redisOptions() RedisOptions { return *o }

// newRedisOptions is Info.Options of the single-Redis backends.
func newRedisOptions() Options { return &RedisOptions{} }

func init() {
	// go-redis logs Sentinel events to stderr; the run's own log and the
	// Sentinels' logs in the store say the same.
	redis.SetLogger(quietLogger{})
}

type quietLogger struct{}

func (quietLogger) Printf(ctx context.Context, format string, v ...any) {}

// startRedisTarget starts one Redis, or a Sentinel group when the run
// asks for one.
func startRedisTarget(ctx context.Context, env Env) (*redisTarget, error) {
	t := &redisTarget{env: env, keys: defaultRedisKeys}
	if o, ok := env.Options.(interface{ redisOptions() RedisOptions }); ok {
		t.opt = o.redisOptions()
	}
	if env.Servers.Sentinel {
		g, err := rediskind.StartSentinelGroup(ctx, env.Cluster, env.Servers.Persistence)
		if err != nil {
			return nil, fmt.Errorf("backends: %w", err)
		}
		t.group = g
		return t, nil
	}
	r, err := startOneRedis(ctx, env)
	if err != nil {
		return nil, err
	}
	t.server = r
	return t, nil
}

// client returns process c's own go-redis client, connected: to the one
// server, or a FailoverClient whose every connection (to Sentinels and to
// whichever server is primary) goes through c's links.
func (t *redisTarget) client(ctx context.Context, c ClientEnv) *redis.Client {
	rc := t.newClient(c)
	connect(ctx, t.env.OpTimeout, rc)
	return rc
}

// newClient is process c's go-redis client, not yet connected.
func (t *redisTarget) newClient(c ClientEnv) *redis.Client {
	timeout := t.env.OpTimeout
	if t.group == nil {
		return serverClient(t.env, c.Process, t.server, timeout)
	}
	cl := t.env.Cluster
	d := net.Dialer{Timeout: timeout}
	o := lockFailoverOptions(t.group.MasterName(), t.group.SentinelAddrs(), timeout)
	o.ClientName = rediskind.ClientName(c.Process)
	if a := t.group.MasterAuth; a != nil {
		o.Username, o.Password = a.Username, a.Password
	}
	if len(t.group.Sentinels) > 0 {
		if a := cluster.AuthOf(t.group.Sentinels[0]); a != nil {
			o.SentinelUsername, o.SentinelPassword = a.Username, a.Password
		}
	}
	sentinels := map[string]bool{}
	for _, a := range t.group.SentinelAddrs() {
		sentinels[a] = true
	}
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		// addr is the server's own address (a Sentinel's, or the primary's
		// as the Sentinels name it): TLS names it, the link carries it.
		auth := t.group.MasterAuth
		if sentinels[addr] && len(t.group.Sentinels) > 0 {
			auth = cluster.AuthOf(t.group.Sentinels[0])
		}
		real := addr
		if s := cl.ServerByAddr(addr); s != nil {
			addr = cl.ClientAddr(c.Process, s)
		}
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return tlsClient(ctx, conn, auth, real)
	}
	return redis.NewFailoverClient(o)
}

// tlsClient is conn wrapped in TLS when auth asks for it (the server's
// own address real names it), conn itself otherwise.
func tlsClient(ctx context.Context, conn net.Conn, auth *cluster.Auth, real string) (net.Conn, error) {
	cfg, err := auth.TLSConfig(real)
	if err != nil || cfg == nil {
		if err != nil {
			conn.Close()
		}
		return conn, err
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// confirm runs after a successful SET: with wait_replicas it asks the
// primary to WAIT for that many replicas and treats a short count as a
// failed acquire (the lock is given back) — the mitigation users ask about,
// which narrows the failover window but does not close it.
func (t *redisTarget) confirm(ctx context.Context, rc *redis.Client, key, token string) error {
	n := t.opt.WaitReplicas
	if n <= 0 {
		return nil
	}
	wait := t.env.OpTimeout / 2
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl) / 2
	}
	got, err := rc.Wait(ctx, n, max(wait, time.Millisecond)).Result()
	if err != nil {
		return fmt.Errorf("acquire %s: WAIT: %w", key, err)
	}
	if got >= int64(n) {
		return nil
	}
	if err := t.keys.release(ctx, rc, key, token); err != nil && err != ErrNotHeld {
		return fmt.Errorf("acquire %s: only %d of %d replicas acknowledged, and giving the lock back failed: %w", key, got, n, err)
	}
	return Certain(fmt.Errorf("acquire %s: only %d of %d replicas acknowledged the lock", key, got, n))
}

// setNXBackend is a single-Redis lock taken with SET key token NX PX ttl;
// backends built on it differ in how they release.
type setNXBackend struct {
	target  *redisTarget
	release func(k redisKeys, ctx context.Context, rc *redis.Client, key, token string) error
}

// newSetNXBackend returns the factory of a SET NX PX lock with this release.
func newSetNXBackend(release func(k redisKeys, ctx context.Context, rc *redis.Client, key, token string) error) Factory {
	return func(ctx context.Context, env Env) (Backend, error) {
		t, err := startRedisTarget(ctx, env)
		if err != nil {
			return nil, err
		}
		return &setNXBackend{target: t, release: release}, nil
	}
}

func (b *setNXBackend) Client(ctx context.Context, c ClientEnv) (Client, error) {
	return &setNXClient{b: b, rc: b.target.client(ctx, c), clock: c.Clock}, nil
}

func (b *setNXBackend) Close() error { return nil }

type setNXClient struct {
	b     *setNXBackend
	rc    *redis.Client
	clock *clientfault.Clock
}

func (c *setNXClient) Acquire(ctx context.Context, key string) (Grant, error) {
	start := c.clock.Now()
	token := randomToken()
	ttl := c.b.target.env.TTL
	if err := c.b.target.keys.setNX(ctx, c.rc, key, token, ttl); err != nil {
		return Grant{}, err
	}
	if err := c.b.target.confirm(ctx, c.rc, key, token); err != nil {
		return Grant{}, err
	}
	return Grant{Lease: leaseLeft(c.clock, ttl, start), HasLease: true, Token: token}, nil
}

func (c *setNXClient) Release(ctx context.Context, key string, g Grant) error {
	return c.b.release(c.b.target.keys, ctx, c.rc, key, g.Token)
}

func (c *setNXClient) Close() error { return c.rc.Close() }
