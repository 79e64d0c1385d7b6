package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"gopkg.in/yaml.v3"
)

// ServersExternal names servers someone else runs (Options, `--servers
// external --servers-file FILE`).
const ServersExternal = "external"

// ErrServersFile is wrapped by every problem with a servers file's text:
// the user's input (exit 254).
var ErrServersFile = errors.New("bad servers file")

// ErrServerCheck is wrapped when a named server does not answer or is not
// what the file says (a replica named as a primary): the harness cannot
// run (exit 255).
var ErrServerCheck = errors.New("server check failed")

// ServersFile is a servers file: the servers someone else runs that an
// external run uses (docs/servers-file.md):
//
//	redis: [10.0.0.5:6379, 10.0.0.6:6379]          # primaries, in the order backends take them
//	sentinel: {master: mymaster, addrs: [10.0.0.9:26379]}
//	postgres: postgres://user:pass@db:5432/app       # a DSN
//	etcd: [10.0.0.7:2379]
//	zookeeper: [10.0.0.8:2181]
//
// Any server may instead be a mapping that says how to control it, so that
// server faults (server-pause, kill, failover) can act on it:
//
//	redis:
//	  - {addr: 127.0.0.1:6379, control: docker, container: lt-redis-0}
//	postgres: {dsn: postgres://..., control: docker, container: lt-postgres}
type ServersFile struct {
	// Redis are standalone Redis primaries (and, for a Sentinel group,
	// its primary and replica first).
	Redis []ServerEntry `yaml:"redis,omitempty"`
	// Sentinel is a Sentinel group.
	Sentinel *SentinelEntry `yaml:"sentinel,omitempty"`
	// Postgres is a PostgreSQL server, by its DSN.
	Postgres *ServerEntry `yaml:"postgres,omitempty"`
	// Etcd are etcd members' client addresses.
	Etcd []ServerEntry `yaml:"etcd,omitempty"`
	// Zookeeper are ZooKeeper servers' client addresses.
	Zookeeper []ServerEntry `yaml:"zookeeper,omitempty"`
}

// ServerEntry is one server of a servers file: its address (a DSN for
// PostgreSQL) and, optionally, how the harness controls it.
type ServerEntry struct {
	// Addr is host:port (or a postgres:// DSN).
	Addr string `yaml:"addr,omitempty"`
	// DSN is the same as Addr, for PostgreSQL.
	DSN string `yaml:"dsn,omitempty"`
	// Control says how server faults reach the server: "" (they cannot)
	// or "docker" (docker pause/unpause/kill/start of Container).
	Control string `yaml:"control,omitempty"`
	// Container is the container's name or id, with control: docker.
	Container string `yaml:"container,omitempty"`
	line      int
}

// SentinelEntry is a Sentinel group of a servers file.
type SentinelEntry struct {
	// Master is the name the Sentinels monitor the primary under.
	Master string `yaml:"master"`
	// Addrs are the Sentinels' addresses.
	Addrs []ServerEntry `yaml:"addrs"`
	// Servers are the group's Redis servers, its primary first (optional:
	// name them, with control, for faults such as failover to reach them).
	Servers []ServerEntry `yaml:"servers,omitempty"`
	line    int
}

// UnmarshalYAML takes a plain address or a mapping.
func (e *ServerEntry) UnmarshalYAML(n *yaml.Node) error {
	e.line = n.Line
	if n.Kind == yaml.ScalarNode {
		e.Addr = n.Value
		return nil
	}
	type plain ServerEntry
	var p plain
	if err := decodeStrict(n, &p); err != nil {
		return err
	}
	*e = ServerEntry(p)
	e.line = n.Line
	return nil
}

// UnmarshalYAML keeps the group's line.
func (s *SentinelEntry) UnmarshalYAML(n *yaml.Node) error {
	type plain SentinelEntry
	var p plain
	if err := decodeStrict(n, &p); err != nil {
		return err
	}
	*s = SentinelEntry(p)
	s.line = n.Line
	return nil
}

// decodeStrict decodes a mapping node into v, refusing unknown keys.
func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		// The node's own lines are lost in the re-encoding: name the
		// mapping's line instead.
		msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
		msg = regexp.MustCompile(`line \d+: `).ReplaceAllString(strings.TrimSpace(msg), "")
		return fmt.Errorf("line %d: %s", n.Line, msg)
	}
	return nil
}

// address is the entry's address (or DSN).
func (e ServerEntry) address() string {
	if e.DSN != "" {
		return e.DSN
	}
	return e.Addr
}

// LoadServersFile reads and checks a servers file's text. Errors read
// "FILE:LINE: problem" and wrap ErrServersFile.
func LoadServersFile(path string) (*ServersFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrServersFile, err)
	}
	return ParseServersFile(data, path)
}

// ParseServersFile reads a servers file from data; source names it in errors.
func ParseServersFile(data []byte, source string) (*ServersFile, error) {
	bad := func(line int, format string, a ...any) error {
		return fmt.Errorf("%s:%d: %w: %s", source, max(line, 1), ErrServersFile, fmt.Sprintf(format, a...))
	}
	if len(data) > 1<<20 {
		return nil, bad(1, "the file is over the 1 MiB limit")
	}
	var f ServersFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, bad(1, "the file is empty: name at least one server (redis:, sentinel:, postgres:, etcd:, zookeeper:)")
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
		msg = strings.TrimPrefix(strings.TrimSpace(strings.SplitN(msg, "\n", 2)[0]), "yaml: ")
		line := 1
		if m := regexp.MustCompile(`^line (\d+): `).FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = strings.TrimPrefix(msg, m[0])
		}
		msg = regexp.MustCompile(`field (\S+) not found in type cluster\.\w+`).ReplaceAllString(msg, "unknown field $1 (servers files take redis, sentinel, postgres, etcd, zookeeper; a server takes addr, dsn, control, container)")
		if m := regexp.MustCompile("cannot unmarshal !!(\\w+) (?:`(.*)` )?into (\\S+)").FindStringSubmatch(msg); m != nil {
			got := map[string]string{"seq": "a list", "map": "a mapping"}[m[1]]
			if m[2] != "" {
				got = strconv.Quote(m[2])
			}
			want := "a server (host:port, or a mapping with addr:)"
			if strings.HasPrefix(m[3], "[]") {
				want = "a list of servers ([host:port, ...])"
			} else if strings.Contains(m[3], "Sentinel") {
				want = "a sentinel group ({master: NAME, addrs: [host:port]})"
			}
			msg = got + " is not " + want
		}
		return nil, bad(line, "%s", msg)
	}
	if len(f.Redis) == 0 && f.Sentinel == nil && f.Postgres == nil && len(f.Etcd) == 0 && len(f.Zookeeper) == 0 {
		return nil, bad(1, "no servers: name at least one (redis:, sentinel:, postgres:, etcd:, zookeeper:)")
	}
	check := func(kind string, e ServerEntry) error {
		a := e.address()
		switch {
		case a == "":
			return bad(e.line, "a %s server needs an address (addr: host:port)", kind)
		case kind == "postgres":
			u, err := url.Parse(a)
			if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
				return bad(e.line, "postgres: %q is not a DSN (postgres://user:password@host:5432/database)", a)
			}
		default:
			_, port, err := net.SplitHostPort(a)
			if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
				return bad(e.line, "%s: %q is not host:port (a port is a number from 1 to 65535)", kind, a)
			}
		}
		switch e.Control {
		case "":
			if e.Container != "" {
				return bad(e.line, "%s %s names a container but no control (write control: docker)", kind, a)
			}
		case "docker":
			if e.Container == "" {
				return bad(e.line, "%s %s: control: docker needs container: NAME", kind, a)
			}
		default:
			return bad(e.line, "%s %s: unknown control %q (docker)", kind, a, e.Control)
		}
		return nil
	}
	seen := map[string]int{}
	for _, group := range []struct {
		kind string
		es   []ServerEntry
	}{{"redis", f.Redis}, {"etcd", f.Etcd}, {"zookeeper", f.Zookeeper}} {
		for _, e := range group.es {
			if err := check(group.kind, e); err != nil {
				return nil, err
			}
			if l, dup := seen[e.address()]; dup {
				return nil, bad(e.line, "%s is named twice (first at line %d)", e.address(), l)
			}
			seen[e.address()] = e.line
		}
	}
	if f.Postgres != nil {
		if err := check("postgres", *f.Postgres); err != nil {
			return nil, err
		}
	}
	if s := f.Sentinel; s != nil {
		if s.Master == "" {
			return nil, bad(s.line, "sentinel needs master: the name its Sentinels monitor the primary under")
		}
		if len(s.Addrs) == 0 {
			return nil, bad(s.line, "sentinel needs addrs: the Sentinels' host:port")
		}
		for _, e := range s.Addrs {
			if err := check("sentinel", e); err != nil {
				return nil, err
			}
		}
		for _, e := range s.Servers {
			if err := check("redis", e); err != nil {
				return nil, err
			}
		}
	}
	return &f, nil
}

// Given is what the file names, as a given cluster takes it.
func (f *ServersFile) Given() Given {
	addrs := func(es []ServerEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.address())
		}
		return out
	}
	g := Given{Redis: addrs(f.Redis), Etcd: addrs(f.Etcd), Zookeeper: addrs(f.Zookeeper)}
	if f.Postgres != nil {
		g.Postgres = f.Postgres.address()
	}
	if f.Sentinel != nil {
		g.Sentinel = &GivenSentinel{Master: f.Sentinel.Master, Addrs: addrs(f.Sentinel.Addrs), Servers: addrs(f.Sentinel.Servers)}
	}
	return g
}

// Controls maps each controlled server's address (a DSN for PostgreSQL)
// to its container.
func (f *ServersFile) Controls() map[string]string {
	out := map[string]string{}
	add := func(es ...ServerEntry) {
		for _, e := range es {
			if e.Control == "docker" {
				out[e.address()] = e.Container
			}
		}
	}
	add(f.Redis...)
	add(f.Etcd...)
	add(f.Zookeeper...)
	if f.Postgres != nil {
		add(*f.Postgres)
	}
	if f.Sentinel != nil {
		add(f.Sentinel.Addrs...)
		add(f.Sentinel.Servers...)
	}
	return out
}

// Uncontrolled lists the servers of the kinds given that the file gives no
// control for ("redis 10.0.0.5:6379"): server faults cannot act on them.
// With sentinel, the Redis servers are the Sentinel group's.
func (f *ServersFile) Uncontrolled(kinds []string, sentinel bool) []string {
	var out []string
	add := func(kind string, es ...ServerEntry) {
		if !slices.Contains(kinds, kind) {
			return
		}
		for _, e := range es {
			if e.Control == "" {
				out = append(out, kind+" "+redactDSN(e.address()))
			}
		}
	}
	switch {
	case sentinel && f.Sentinel != nil && len(f.Sentinel.Servers) > 0:
		add("redis", f.Sentinel.Servers...)
	case sentinel:
		if slices.Contains(kinds, "redis") {
			out = append(out, "the Sentinel group's Redis servers (name them under sentinel: servers:)")
		}
	default:
		add("redis", f.Redis...)
	}
	add("etcd", f.Etcd...)
	add("zookeeper", f.Zookeeper...)
	if f.Postgres != nil {
		add("postgres", *f.Postgres)
	}
	return out
}

// redactDSN hides a DSN's password.
func redactDSN(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// Check asks every server the file names for the kinds a run needs
// whether it answers and is what the file says: a Redis server is a
// primary (ROLE), the Sentinels know the master, PostgreSQL takes a
// connection, etcd and ZooKeeper answer. The first problem is returned,
// wrapping ErrServerCheck and naming the server.
func (f *ServersFile) Check(ctx context.Context, kinds []string, sentinel bool) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	need := func(k string) bool { return slices.Contains(kinds, k) }
	fail := func(what string, err error) error {
		return fmt.Errorf("%w: %s: %w", ErrServerCheck, what, err)
	}
	if need("redis") && sentinel {
		s := f.Sentinel
		if s == nil {
			return fmt.Errorf("%w: the run uses Redis Sentinel, but the servers file names no sentinel group", ErrServerCheck)
		}
		for _, e := range s.Addrs {
			r, err := redisCall(ctx, e.address(), "SENTINEL", "get-master-addr-by-name", s.Master)
			if err != nil {
				return fail("sentinel "+e.address(), err)
			}
			if r == nil {
				return fail("sentinel "+e.address(), fmt.Errorf("it does not know a master named %q", s.Master))
			}
		}
	} else if need("redis") {
		if len(f.Redis) == 0 {
			return fmt.Errorf("%w: the backend uses Redis, but the servers file names none", ErrServerCheck)
		}
		for _, e := range f.Redis {
			r, err := redisCall(ctx, e.address(), "ROLE")
			if err != nil {
				return fail("redis "+e.address(), err)
			}
			if l, ok := r.([]any); !ok || len(l) == 0 || l[0] != "master" {
				role := "unknown"
				if ok && len(l) > 0 {
					role = fmt.Sprint(l[0])
				}
				return fail("redis "+e.address(), fmt.Errorf("it is a %s, not a primary: locks taken there would be refused or lost", role))
			}
		}
	}
	if need("postgres") {
		if f.Postgres == nil {
			return fmt.Errorf("%w: the backend uses PostgreSQL, but the servers file names none", ErrServerCheck)
		}
		if err := pingPostgresDSN(ctx, f.Postgres.address()); err != nil {
			return fail("postgres "+redactDSN(f.Postgres.address()), err)
		}
	}
	if need("etcd") {
		if len(f.Etcd) == 0 {
			return fmt.Errorf("%w: the backend uses etcd, but the servers file names none", ErrServerCheck)
		}
		for _, e := range f.Etcd {
			m := newEtcdMember(program{name: "etcd " + e.address(), given: e.address()})
			if err := m.health(ctx); err != nil {
				return fail("etcd "+e.address(), err)
			}
		}
	}
	if need("zookeeper") {
		if len(f.Zookeeper) == 0 {
			return fmt.Errorf("%w: the backend uses ZooKeeper, but the servers file names none", ErrServerCheck)
		}
		for _, e := range f.Zookeeper {
			if err := zkHandshake(ctx, e.address()); err != nil {
				return fail("zookeeper "+e.address(), err)
			}
		}
	}
	return nil
}

// pingPostgresDSN connects to dsn and pings.
func pingPostgresDSN(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}

// zkHandshake checks that a ZooKeeper server answers at addr: it opens a
// session (ZooKeeper's connect request), reads the server's connect
// response, and closes the session at once. Something else listening there
// (a Redis) does not answer as ZooKeeper does.
func zkHandshake(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	// ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId,
	// passwd (16 bytes), readOnly; after its length.
	req := binary.BigEndian.AppendUint32(nil, 45)
	req = binary.BigEndian.AppendUint32(req, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 4000)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 16)
	req = append(req, make([]byte, 16)...)
	req = append(req, 0)
	if _, err := c.Write(req); err != nil {
		return fmt.Errorf("it does not answer as a ZooKeeper server: %w", err)
	}
	// ConnectResponse: protocolVersion, timeOut, sessionId, passwd, readOnly.
	var resp [41]byte
	n, err := io.ReadAtLeast(c, resp[:], 4)
	if err == nil && n < 4+36 {
		var m int
		m, err = io.ReadAtLeast(c, resp[n:], 4+36-n)
		n += m
	}
	size := binary.BigEndian.Uint32(resp[:4])
	if err != nil || (size != 36 && size != 37) || binary.BigEndian.Uint32(resp[8:12]) == 0 || binary.BigEndian.Uint64(resp[12:20]) == 0 {
		what := fmt.Sprintf("%q", resp[:min(n, 40)])
		if err != nil {
			what += " (" + err.Error() + ")"
		}
		return fmt.Errorf("it does not answer as a ZooKeeper server (no session granted; it sent %s)", what)
	}
	// CloseSession: xid 1, type -11.
	closeReq := binary.BigEndian.AppendUint32(nil, 8)
	closeReq = binary.BigEndian.AppendUint32(closeReq, 1)
	closeReq = binary.BigEndian.AppendUint32(closeReq, uint32(0xFFFFFFF5))
	_, _ = c.Write(closeReq)
	return nil
}
