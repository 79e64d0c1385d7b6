package cluster

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// RedisOptions configure one redis-server.
type RedisOptions struct {
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
	Faultable
	opt RedisOptions
	// match limits ShortenTTLs to the keys matching it (a SCAN pattern;
	// empty: every key): on a server someone else runs, the run's own.
	match string
}

// StartRedis starts a redis-server on a free port and waits until it answers PING.
func (c *Cluster) StartRedis(ctx context.Context, opt RedisOptions) (*Redis, error) {
	r := newRedis(program{}, opt, c.keyMatch())
	name := func(n int) string {
		if opt.Name != "" {
			return opt.Name
		}
		return fmt.Sprintf("redis-%d", n)
	}
	r.auth = c.redisAuth() // a server someone else runs: the file's (place)
	bin, _ := RedisPrograms(c.opt.RedisProgram)
	err := c.place(ctx, &r.Faultable, name, placement{kind: redisKind, program: bin, pkg: bin, usual: 6379,
		args:    func(host string, port int, dir string) []string { return redisArgs(host, port, dir, opt) },
		prepare: func(sp *Spec, host string, port int, dir string) error { return c.secureRedis(r, sp, host, port, dir) }})
	if err != nil {
		return nil, err
	}
	r.opt.Name = r.name
	c.mu.Lock()
	c.redis = append(c.redis, r)
	c.mu.Unlock()
	c.AddServer(r)
	return r, nil
}

func redisArgs(host string, port int, dir string, opt RedisOptions) []string {
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
func (c *Cluster) secureRedis(r *Redis, sp *Spec, host string, port int, dir string) error {
	if r.auth != nil && r.auth.Password != "" {
		conf := path.Join(dir, redisAuthConf)
		sp.Args = append([]string{conf}, sp.Args...)
		sp.Files = append(sp.Files, File{Path: conf, Content: redisAuthConfig(r.auth), Mode: 0o600})
		sp.Shell = redisStart // Redis 6.0: without what it does not know
	}
	if !c.ServersTLS() {
		return nil
	}
	files, ca, cert, key, err := c.ServerTLS(r.name, dir, host)
	if err != nil {
		return err
	}
	sp.Files = append(sp.Files, files...)
	sp.Args = append(sp.Args, redisTLSArgs(port, ca, cert, key)...)
	return c.withTLS(&r.auth)
}

// redisTLSArgs make a Redis server (or Sentinel) speak TLS only, on port,
// and replicate (a Sentinel: talk to the servers and to other Sentinels)
// over TLS. Clients need no certificate of their own.
func redisTLSArgs(port int, ca, cert, key string) []string {
	return []string{"--port", "0", "--tls-port", strconv.Itoa(port), "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", ca, "--tls-auth-clients", "no", "--tls-replication", "yes"}
}

// withTLS adds the run's CA to *a (made when nil): what a client checks a
// server of the cluster's against.
func (c *Cluster) withTLS(a **Auth) error {
	ca, err := c.RunCA()
	if err != nil {
		return err
	}
	if *a == nil {
		*a = &Auth{}
	}
	(*a).TLS = &TLSFiles{CA: ca.CAFile()}
	return nil
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
func redisAuthConfig(a *Auth) []byte {
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
	v, err := redisCall(ctx, r.endpoint(), "EVAL", shortenTTLScript, "0", strconv.FormatInt(d.Milliseconds(), 10), match)
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

// newRedis is a Redis server at p; match limits its ShortenTTLs.
func newRedis(p program, opt RedisOptions, match string) *Redis {
	p.kind = redisKind
	r := &Redis{Faultable: Faultable{program: p}, opt: opt, match: match}
	r.ready = r.ping
	return r
}

// ping sends PING over a fresh connection and expects +PONG.
func (r *Redis) ping(ctx context.Context) error { return pingRedis(ctx, r.endpoint()) }

// pingRedis sends PING to e over a fresh connection (with e's
// credentials) and expects PONG.
func pingRedis(ctx context.Context, e Endpoint) error {
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
func redisDeleteMatching(ctx context.Context, addr Endpoint, pattern string) error {
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

// redisKind is the Redis kind's name.
const redisKind = "redis"

func init() {
	RegisterKind(Kind{
		Name:       redisKind,
		Sessions:   true,
		Companions: []string{sentinelKind},
		Packages:   []string{"redis-server", "redis-sentinel"},
		// Its Sentinels too.
		TLS: []string{ServersLocal, ServersDocker},
		// Valkey (redis_program: valkey): Debian 13 on.
		OptionalPackages: []string{"valkey-server", "valkey-sentinel"},
		Image:            "redis:7.4",
		Start: func(ctx context.Context, c *Cluster, o StartOptions) error {
			if o.Sentinel {
				_, err := c.StartSentinelGroup(ctx, o.Persistence)
				return err
			}
			_, err := c.StartRedis(ctx, RedisOptions{Persistence: o.Persistence})
			return err
		},
		Check:   checkRedisPrimary,
		Cleanup: cleanupRedis,
		Compose: &ComposeSpec{Port: 17000, Services: redisCompose},
	})
}

// cleanupRedis deletes the run's keys ("*<namespace>:k*") on every server.
func cleanupRedis(ctx context.Context, servers []Endpoint, namespace string) error {
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
func checkRedisPrimary(ctx context.Context, e Endpoint) error {
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
func redisVersion(ctx context.Context, s Server) (string, error) {
	v, err := redisCall(ctx, Endpoint{Addr: s.Addr(), Auth: AuthOf(s)}, "INFO", "server")
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

// Redis server programs (Options.RedisProgram).
const (
	// RedisProgramRedis is Redis itself: redis-server, redis-sentinel.
	RedisProgramRedis = "redis"
	// RedisProgramValkey is Valkey, the Linux Foundation's fork of Redis
	// 7.2: valkey-server, valkey-sentinel (Debian 13 on).
	RedisProgramValkey = "valkey"
)

// RedisPrograms are the server and Sentinel programs (and their Debian
// packages, the same names) of a Redis program choice: "" or redis is
// redis-server and redis-sentinel; valkey is valkey-server and
// valkey-sentinel.
func RedisPrograms(choice string) (server, sentinel string) {
	if choice == RedisProgramValkey {
		return "valkey-server", "valkey-sentinel"
	}
	return "redis-server", "redis-sentinel"
}

// redisCompose is Redis in the standing cluster: five servers (Redlock's,
// and single-Redis backends' first), and a Sentinel group — a primary, its
// replica and three Sentinels, each Sentinel's configuration written fresh
// at each start (a Sentinel rewrites it).
func redisCompose(port int, image string) ComposeCluster {
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	server := func(name string, p int, extra ...string) ComposeService {
		return ComposeService{Name: name, Image: image,
			Command:     append([]string{"redis-server"}, redisArgs("127.0.0.1", p, "/tmp", RedisOptions{Args: extra})...),
			Healthcheck: []string{"CMD", "redis-cli", "-p", strconv.Itoa(p), "ping"}}
	}
	cc := ComposeCluster{Servers: map[string][]ServerEntry{}}
	for i := range 5 {
		name := fmt.Sprintf("redis-%d", i)
		cc.Services = append(cc.Services, server(name, port+i))
		cc.Servers[redisKind] = append(cc.Servers[redisKind], ComposeEntry(name, addr(port+i)))
	}
	primary, replica := port+10, port+11
	rs := server("redis-replica", replica, "--replicaof", "127.0.0.1", strconv.Itoa(primary))
	rs.DependsOn = []string{"redis-primary"}
	cc.Services = append(cc.Services, server("redis-primary", primary), rs)
	cc.Sentinel = &SentinelEntry{Master: sentinelMaster, Servers: []ServerEntry{
		ComposeEntry("redis-primary", addr(primary)), ComposeEntry("redis-replica", addr(replica))}}
	for i := range 3 {
		name, p := fmt.Sprintf("sentinel-%d", i), port+20+i
		conf := fmt.Sprintf(`port %d\nbind 127.0.0.1\nsentinel monitor %s 127.0.0.1 %d 2\nsentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 3000\n`,
			p, sentinelMaster, primary, sentinelMaster, sentinelMaster)
		cc.Services = append(cc.Services, ComposeService{Name: name, Image: image,
			Entrypoint:  []string{"sh", "-c", "printf '" + conf + "' >/tmp/sentinel.conf && exec redis-sentinel /tmp/sentinel.conf"},
			DependsOn:   []string{"redis-replica"},
			Healthcheck: []string{"CMD-SHELL", fmt.Sprintf("redis-cli -p %d sentinel get-master-addr-by-name %s | grep -q 127.0.0.1", p, sentinelMaster)}})
		cc.Sentinel.Addrs = append(cc.Sentinel.Addrs, ComposeEntry(name, addr(p)))
	}
	return cc
}
