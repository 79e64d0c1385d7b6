// Package redis is the Redis kind (redis): redis-server (or Valkey's)
// servers, and a Sentinel group — a primary, a replica and three
// Sentinels — started, handed out from a servers file, faulted and
// cleaned up. It registers itself with cluster's registry from its init.
package redis

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/journal"
)

// User is the ACL user of the Redis servers a locked cluster starts.
const User = "locktorture"

// redisAuth is what the Redis servers c starts ask (nil: nothing).
func redisAuth(c *cluster.Cluster) *cluster.Auth {
	if c.Secret() == "" {
		return nil
	}
	return &cluster.Auth{Username: User, Password: c.Secret()}
}

// endpoint is server s as the harness dials it.
func endpoint(s cluster.Server) cluster.Endpoint {
	return cluster.Endpoint{Addr: s.Addr(), Auth: cluster.AuthOf(s)}
}

// Options configure one redis-server.
type Options struct {
	// Name is the server's name; empty means "redis-<n>".
	Name string
	// Persistence turns on the append-only file with appendfsync always, so
	// a killed server comes back with its keys. Off by default.
	Persistence bool
	// Args are extra redis-server arguments ("--maxclients", "100").
	Args []string
}

// Redis is one redis-server. Restarted after a kill, it comes back empty
// unless it runs with persistence.
type Redis struct {
	cluster.Faultable
	opt Options
	// match limits ShortenTTLs to the keys matching it (a SCAN pattern;
	// empty: every key): on a server someone else runs, the run's own.
	match string
}

// Start starts a redis-server on a free port of c and waits until it
// answers PING (was Cluster.StartRedis); a cluster of servers someone else
// runs hands out the next one named.
func Start(ctx context.Context, c *cluster.Cluster, opt Options) (*Redis, error) {
	r := newRedis("", opt, c.KeyMatch())
	name := func(n int) string {
		if opt.Name != "" {
			return opt.Name
		}
		return fmt.Sprintf("redis-%d", n)
	}
	r.SetAuth(redisAuth(c)) // a server someone else runs: the file's (Place)
	bin, _ := cluster.RedisPrograms(c.RedisProgram())
	err := c.Place(ctx, &r.Faultable, name, cluster.Placement{Kind: Kind, Program: bin, Package: bin, Usual: 6379,
		Args: func(host string, port int, dir string) []string { return redisArgs(host, port, dir, opt) },
		Prepare: func(sp *cluster.Spec, host string, port int, dir string) error {
			return secureRedis(c, r, sp, host, port, dir)
		}})
	if err != nil {
		return nil, err
	}
	r.opt.Name = r.Name()
	c.AddServer(r)
	return r, nil
}

// Servers are the Redis servers c runs so far, in start order (was
// Cluster.Redis).
func Servers(c *cluster.Cluster) []*Redis {
	var out []*Redis
	for _, s := range c.Servers() {
		if r, ok := s.(*Redis); ok {
			out = append(out, r)
		}
	}
	return out
}

func redisArgs(host string, port int, dir string, opt Options) []string {
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", host,
		"--dir", dir,
		"--daemonize", "no",
		"--save", "",
		"--protected-mode", "no",
		"--loglevel", "notice",
		// A primary otherwise waits 5s for more replicas before it sends
		// the first one its data (diskless sync): a Sentinel group's
		// start-up would idle that long.
		"--repl-diskless-sync-delay", "0",
		// A SIGTERM is acted on at the next server cron: at the default hz
		// of 10, up to 100ms after it (every run waits for its servers to
		// stop). Keys expire the same either way: an expired key is gone
		// to every command, whether the cron has deleted it yet or not.
		"--hz", "100",
	}
	if opt.Persistence {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	return append(args, opt.Args...)
}

// secureRedis locks a Redis server the cluster starts (its password in a
// file only its owner reads, never on the command line, which ps shows to
// every local user) and, with TLS, makes it speak TLS only, on port, with
// a certificate of the run's CA; a replica then replicates over TLS.
func secureRedis(c *cluster.Cluster, r *Redis, sp *cluster.Spec, host string, port int, dir string) error {
	if a := r.Auth(); a != nil && a.Password != "" {
		conf := path.Join(dir, redisAuthConf)
		sp.Args = append([]string{conf}, sp.Args...)
		sp.Files = append(sp.Files, cluster.File{Path: conf, Content: redisAuthConfig(a), Mode: 0o600})
		sp.Shell = redisStart // Redis 6.0: without what it does not know
	}
	if !c.ServersTLS() {
		return nil
	}
	files, ca, cert, key, err := c.ServerTLS(r.Name(), dir, host)
	if err != nil {
		return err
	}
	sp.Files = append(sp.Files, files...)
	sp.Args = append(sp.Args, redisTLSArgs(port, ca, cert, key)...)
	a, err := withTLS(c, r.Auth())
	if err != nil {
		return err
	}
	r.SetAuth(a)
	return nil
}

// redisTLSArgs make a Redis server (or Sentinel) speak TLS only, on port,
// and replicate (a Sentinel: talk to the servers and to other Sentinels)
// over TLS. Clients need no certificate of their own.
func redisTLSArgs(port int, ca, cert, key string) []string {
	return []string{"--port", "0", "--tls-port", strconv.Itoa(port), "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", ca, "--tls-auth-clients", "no", "--tls-replication", "yes"}
}

// withTLS adds the run's CA to a (made when nil) and returns it: what a
// client checks a server of the cluster's against.
func withTLS(c *cluster.Cluster, a *cluster.Auth) (*cluster.Auth, error) {
	ca, err := c.RunCA()
	if err != nil {
		return nil, err
	}
	if a == nil {
		a = &cluster.Auth{}
	}
	a.TLS = &cluster.TLSFiles{CA: ca.CAFile()}
	return a, nil
}

// redisStart starts a locked Redis server or Sentinel ($1 the program,
// its arguments after, a configuration file among them): Redis 6.0
// (Debian 11's) knows neither the pub/sub rule &* of an ACL user nor
// Sentinel's auth-user (both 6.2), so for it they are taken out of the
// files — 6.0 gives every user every channel, and its Sentinel
// authenticates as the default user with auth-pass, the same password.
const redisStart = `bin="$1"; shift
case "$("$bin" --version 2>/dev/null)" in
*" v=6.0."* | *" v=5."*)
  for f in "$@"; do
    case "$f" in *.conf) [ -f "$f" ] && sed -i -e 's/ &\*//' -e '/^sentinel auth-user /d' "$f" ;; esac
  done ;;
esac
exec "$bin" "$@"
`

// redisShell is the script a Redis server or Sentinel starts through:
// redisStart when it is locked, none otherwise.
func redisShell(locked bool) string {
	if locked {
		return redisStart
	}
	return ""
}

// redisAuthConf is the file that locks a Redis server the harness starts.
const redisAuthConf = "auth.conf"

// redisAuthConfig locks a Redis server: the default user takes only the
// password (requirepass), the ACL user a takes it too, and a replica
// authenticates to its primary as a.
func redisAuthConfig(a *cluster.Auth) []byte {
	return []byte(fmt.Sprintf("requirepass %s\nuser %s on >%s ~* &* +@all\nmasteruser %s\nmasterauth %s\n",
		a.Password, a.Username, a.Password, a.Username, a.Password))
}

// ShortenTTLs has the effect on expiry of a jump of the server's clock by
// d: every key's remaining time to live is cut by d, and keys with less
// than d left expire now. It runs as one script, so it is atomic. (A real
// clock jump cannot be injected: libfaketime hangs Debian's redis-server.)
// On a server someone else runs it acts only on the run's keys (see
// ServerSet.KeyMatch). It returns how many keys it changed.
func (r *Redis) ShortenTTLs(ctx context.Context, d time.Duration) (int, error) {
	match := r.match
	if match == "" {
		match = "*"
	}
	v, err := redisCall(ctx, endpoint(r), "EVAL", shortenTTLScript, "0", strconv.FormatInt(d.Milliseconds(), 10), match)
	if err != nil {
		return 0, fmt.Errorf("%s: clock jump: %w", r.Name(), err)
	}
	n, _ := v.(int64)
	return int(n), nil
}

const shortenTTLScript = `
local cursor = "0"
local n = 0
local d = tonumber(ARGV[1])
repeat
  local r = redis.call("SCAN", cursor, "MATCH", ARGV[2], "COUNT", 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    local t = redis.call("PTTL", k)
    if t > 0 then
      if t <= d then redis.call("DEL", k) else redis.call("PEXPIRE", k, t - d) end
      n = n + 1
    end
  end
until cursor == "0"
return n`

// newRedis is a Redis server named name (set when it is placed: "");
// match limits its ShortenTTLs.
func newRedis(name string, opt Options, match string) *Redis {
	r := &Redis{Faultable: cluster.NewFaultable(Kind, name), opt: opt, match: match}
	r.SetReady(r.ping)
	return r
}

// ping sends PING over a fresh connection and expects +PONG.
func (r *Redis) ping(ctx context.Context) error { return pingRedis(ctx, endpoint(r)) }

// pingRedis sends PING to e over a fresh connection (with e's
// credentials) and expects PONG.
func pingRedis(ctx context.Context, e cluster.Endpoint) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	v, err := redisCall(ctx, e, "PING")
	if err != nil {
		return err
	}
	if v != "PONG" {
		return fmt.Errorf("PING answered %q", v)
	}
	return nil
}

// redisDeleteMatching deletes the keys matching a SCAN pattern.
func redisDeleteMatching(ctx context.Context, addr cluster.Endpoint, pattern string) error {
	cursor := "0"
	for {
		v, err := redisCall(ctx, addr, "SCAN", cursor, "MATCH", pattern, "COUNT", "1000")
		if err != nil {
			return err
		}
		r, ok := v.([]any)
		if !ok || len(r) != 2 {
			return fmt.Errorf("SCAN answered %v", v)
		}
		cursor, _ = r[0].(string)
		keys, _ := r[1].([]any)
		if len(keys) > 0 {
			args := []string{"DEL"}
			for _, k := range keys {
				args = append(args, fmt.Sprint(k))
			}
			if _, err := redisCall(ctx, addr, args...); err != nil {
				return err
			}
		}
		if cursor == "0" || cursor == "" {
			return nil
		}
	}
}

// Kind is the Redis kind's name.
const Kind = "redis"

func init() {
	cluster.RegisterKind(cluster.Kind{
		Name:     Kind,
		Packages: []string{"redis-server", "redis-sentinel"},
		// Valkey (redis_program: valkey): Debian 13 on.
		OptionalPackages: []string{"valkey-server", "valkey-sentinel"},
		Image:            "redis:7.4",
		StartupCost:      100 * time.Millisecond,
		Start: func(ctx context.Context, c *cluster.Cluster, o cluster.StartOptions) error {
			if o.Sentinel {
				_, err := StartSentinelGroup(ctx, c, o.Persistence)
				return err
			}
			_, err := Start(ctx, c, Options{Persistence: o.Persistence})
			return err
		},
		Abilities: kind{},
	})
	// The replication cut's undo on someone else's servers (journaled).
	journal.Register(undoRedisConfig, func(ctx context.Context, args map[string]string) error {
		_, err := redisCall(ctx, cluster.Endpoint{Addr: args["addr"], Auth: cluster.AuthFromJournal(args)}, "CONFIG", "SET", args["param"], args["value"])
		return err
	})
}

// kind is what the Redis kind can do beyond starting its servers (the
// cluster abilities it implements): among them the Sentinel group's
// (cluster.SentinelGroup), which no other kind has.
type kind struct{}

func (kind) EndsSessions() bool { return true }

func (kind) CompanionNames() []string { return []string{SentinelKind} }

// TLSModes: its Sentinels too.
func (kind) TLSModes() []string { return []string{cluster.ServersLocal, cluster.ServersDocker} }

func (kind) Check(ctx context.Context, e cluster.Endpoint) error { return checkRedisPrimary(ctx, e) }

func (kind) Cleanup(ctx context.Context, servers []cluster.Endpoint, namespace string) error {
	return cleanupRedis(ctx, servers, namespace)
}

func (kind) Compose() *cluster.ComposeSpec {
	return &cluster.ComposeSpec{Port: 17000, Services: redisCompose}
}

func (kind) CheckSentinel(ctx context.Context, sentinels []cluster.Endpoint, master string, masterAuth *cluster.Auth) error {
	return checkSentinel(ctx, sentinels, master, masterAuth)
}

func (kind) SentinelPrimary(ctx context.Context, sentinels []cluster.Endpoint, master string) string {
	return sentinelPrimary(ctx, sentinels, master)
}

// undoRedisConfig sets a Redis server's config parameter back (args:
// addr, param, value): after the replication cut's masterauth.
const undoRedisConfig = "redis-config"

// cleanupRedis deletes the run's keys ("*<namespace>:k*") on every server.
func cleanupRedis(ctx context.Context, servers []cluster.Endpoint, namespace string) error {
	var errs []error
	for _, e := range servers {
		if err := redisDeleteMatching(ctx, e, "*"+namespace+":k*"); err != nil {
			errs = append(errs, fmt.Errorf("redis %s: %w", e.Addr, err))
		}
	}
	return errors.Join(errs...)
}

// checkRedisPrimary asks a Redis server its ROLE: a run's locks need a
// primary (a replica would refuse them, or lose them).
func checkRedisPrimary(ctx context.Context, e cluster.Endpoint) error {
	r, err := redisCall(ctx, e, "ROLE")
	if err != nil {
		return err
	}
	if l, ok := r.([]any); !ok || len(l) == 0 || l[0] != "master" {
		role := "unknown"
		if ok && len(l) > 0 {
			role = fmt.Sprint(l[0])
		}
		return fmt.Errorf("it is a %s, not a primary: locks taken there would be refused or lost", role)
	}
	return nil
}

// Version is the server's redis_version, as INFO server says.
func (r *Redis) Version(ctx context.Context) (string, error) { return redisVersion(ctx, r) }

// Version is the Sentinel's redis_version, as INFO server says.
func (s *Sentinel) Version(ctx context.Context) (string, error) { return redisVersion(ctx, s) }

// redisVersion asks a Redis server or Sentinel its redis_version; a
// Valkey server's is "valkey " and its valkey_version (its redis_version
// is the Redis it is compatible with).
func redisVersion(ctx context.Context, s cluster.Server) (string, error) {
	v, err := redisCall(ctx, endpoint(s), "INFO", "server")
	if err != nil {
		return "", fmt.Errorf("%s: INFO server: %w", s.Name(), err)
	}
	text, _ := v.(string)
	redis := ""
	for _, l := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "valkey_version:"); ok {
			return "valkey " + rest, nil
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
			redis = rest
		}
	}
	if redis == "" {
		return "", fmt.Errorf("%s: INFO server names no redis_version", s.Name())
	}
	return redis, nil
}

// redisCompose is Redis in the standing cluster: five servers (Redlock's,
// and single-Redis backends' first), and a Sentinel group — a primary, its
// replica and three Sentinels, each Sentinel's configuration written fresh
// at each start (a Sentinel rewrites it).
func redisCompose(port int, image string) cluster.ComposeCluster {
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	server := func(name string, p int, extra ...string) cluster.ComposeService {
		return cluster.ComposeService{Name: name, Image: image,
			Command:     append([]string{"redis-server"}, redisArgs("127.0.0.1", p, "/tmp", Options{Args: extra})...),
			Healthcheck: []string{"CMD", "redis-cli", "-p", strconv.Itoa(p), "ping"}}
	}
	cc := cluster.ComposeCluster{Servers: map[string][]cluster.ServerEntry{}}
	for i := range 5 {
		name := fmt.Sprintf("redis-%d", i)
		cc.Services = append(cc.Services, server(name, port+i))
		cc.Servers[Kind] = append(cc.Servers[Kind], cluster.ComposeEntry(name, addr(port+i)))
	}
	primary, replica := port+10, port+11
	rs := server("redis-replica", replica, "--replicaof", "127.0.0.1", strconv.Itoa(primary))
	rs.DependsOn = []string{"redis-primary"}
	cc.Services = append(cc.Services, server("redis-primary", primary), rs)
	cc.Sentinel = &cluster.SentinelEntry{Master: sentinelMaster, Servers: []cluster.ServerEntry{
		cluster.ComposeEntry("redis-primary", addr(primary)), cluster.ComposeEntry("redis-replica", addr(replica))}}
	for i := range 3 {
		name, p := fmt.Sprintf("sentinel-%d", i), port+20+i
		conf := fmt.Sprintf(`port %d\nbind 127.0.0.1\nsentinel monitor %s 127.0.0.1 %d 2\nsentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 3000\n`,
			p, sentinelMaster, primary, sentinelMaster, sentinelMaster)
		cc.Services = append(cc.Services, cluster.ComposeService{Name: name, Image: image,
			Entrypoint:  []string{"sh", "-c", "printf '" + conf + "' >/tmp/sentinel.conf && exec redis-sentinel /tmp/sentinel.conf"},
			DependsOn:   []string{"redis-replica"},
			Healthcheck: []string{"CMD-SHELL", fmt.Sprintf("redis-cli -p %d sentinel get-master-addr-by-name %s | grep -q 127.0.0.1", p, sentinelMaster)}})
		cc.Sentinel.Addrs = append(cc.Sentinel.Addrs, cluster.ComposeEntry(name, addr(p)))
	}
	return cc
}
