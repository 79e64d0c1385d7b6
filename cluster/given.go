package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"

	"github.com/locktorture/locktorture/internal/journal"
)

// Given names servers that someone else runs, by the addresses one client
// should dial: what a client process gets in its open request (see
// docs/client-protocol.md: an object with a key per kind of server, a list
// of host:port — one connection string for a kind named by a DSN — and
// sentinel). A cluster made by NewGiven starts nothing: StartRedis,
// StartSentinelGroup, Postgres, Etcd and the other starters hand out the
// given servers instead, so every backend builds its clients from them
// exactly as it would from servers it started.
type Given struct {
	// Servers are the servers' addresses by kind ("redis", "etcd", ...;
	// a DSN for "postgres"), in the order the backend takes them.
	Servers map[string][]string
	// Sentinel is a Sentinel group: the name its primary is monitored
	// under and the Sentinels' addresses.
	Sentinel *GivenSentinel
	// Aliases map a server's real address to the one to dial instead (a
	// Sentinel names the primary by its real address; the client must
	// still go through its own link). Not part of the protocol.
	Aliases map[string]string
	// Controls map a server's address (a DSN for PostgreSQL) to the
	// container that runs it, for server faults (servers files'
	// control: docker). Not part of the protocol.
	Controls map[string]string
	// KeyMatch is the SCAN pattern of the run's own keys: a Redis clock
	// jump (ShortenTTLs) acts on those only. Empty: every key.
	KeyMatch string
	// Journal, when set, records before each fault on a given server what
	// would undo it (docker pause, kill, the replication cut), for the
	// run's guard or a later run. Not part of the protocol.
	Journal *journal.Journal
}

// Add appends a server of kind at addr.
func (g *Given) Add(kind, addr string) {
	if g.Servers == nil {
		g.Servers = map[string][]string{}
	}
	g.Servers[kind] = append(g.Servers[kind], addr)
}

// MarshalJSON writes the protocol's servers object: a key per kind with
// servers (a kind named by a DSN gives its one string), and sentinel.
func (g Given) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for kind, addrs := range g.Servers {
		if len(addrs) == 0 {
			continue
		}
		if k, ok := LookupKind(kind); ok && k.DSN {
			m[kind] = addrs[0]
			continue
		}
		m[kind] = addrs
	}
	if g.Sentinel != nil {
		m["sentinel"] = g.Sentinel
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the protocol's servers object: any kind's key with
// a list of addresses or one string, and sentinel.
func (g *Given) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*g = Given{}
	for kind, raw := range m {
		if kind == "sentinel" {
			if string(raw) == "null" {
				continue
			}
			g.Sentinel = &GivenSentinel{}
			if err := json.Unmarshal(raw, g.Sentinel); err != nil {
				return fmt.Errorf("sentinel: %w", err)
			}
			continue
		}
		var one string
		if err := json.Unmarshal(raw, &one); err == nil {
			if one != "" {
				g.Add(kind, one)
			}
			continue
		}
		var addrs []string
		if err := json.Unmarshal(raw, &addrs); err != nil {
			return fmt.Errorf("%s: a list of addresses or one string: %w", kind, err)
		}
		for _, a := range addrs {
			g.Add(kind, a)
		}
	}
	return nil
}

// GivenSentinel is a Sentinel group someone else runs.
type GivenSentinel struct {
	// Master is the name the Sentinels monitor the primary under.
	Master string `json:"master"`
	// Addrs are the Sentinels' addresses.
	Addrs []string `json:"addrs"`
	// Servers are the group's Redis servers, primary first, when known
	// (a servers file may name them). Not part of the protocol.
	Servers []string `json:"-"`
}

// givenState is what a given cluster has handed out so far.
type givenState struct {
	g    Given
	mu   sync.Mutex
	used map[string]int // servers handed out, by kind
}

// next is the next given server of kind and how many were handed out
// before it.
func (s *givenState) next(kind string) (addr string, n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used == nil {
		s.used = map[string]int{}
	}
	n = s.used[kind]
	s.used[kind]++
	given := s.g.Addrs(kind)
	if n >= len(given) {
		return "", n, fmt.Errorf("cluster: %w: the backend wants %s server %d, but only %d were given", ErrStart, kind, n+1, len(given))
	}
	return given[n], n, nil
}

// NewGiven returns a cluster that starts no server: it hands out the
// servers g names. Its Close stops nothing.
func NewGiven(g Given) *Cluster {
	return &Cluster{given: &givenState{g: g}}
}

// GivenAddrs returns the addresses given for a kind of server, and
// whether the cluster is a given one: a starter of a kind of server calls
// it first and, on a given cluster, hands out those addresses instead of
// starting anything.
func (c *Cluster) GivenAddrs(kind string) ([]string, bool) {
	if c.given == nil {
		return nil, false
	}
	return c.given.g.Addrs(kind), true
}

// Addrs returns the addresses given for a kind of server ("redis", "etcd",
// "zookeeper", "postgres" — its DSN —, or any other).
func (g Given) Addrs(kind string) []string { return g.Servers[kind] }

// hostPort is a server's address: the given one, or host:port (host
// empty: 127.0.0.1).
func hostPort(given, host string, port int) string {
	if given != "" {
		return given
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// givenUnit is what stands for a given server's program: a container the
// harness controls through docker when Controls names one for addr, else
// nothing a fault can act on.
func (c *Cluster) givenUnit(name, addr string) Unit {
	if ctr := c.given.g.Controls[addr]; ctr != "" {
		u := &controlledUnit{name: name, container: ctr, journal: c.given.g.Journal}
		// Close "stops" it: thaws or starts it again if a fault left it
		// paused or killed, so the server is left as the run found it.
		c.mu.Lock()
		c.units = append(c.units, u)
		c.mu.Unlock()
		return u
	}
	return uncontrolledUnit{name: name}
}

// givenRedis hands out the next given Redis server.
func (c *Cluster) givenRedis(opt RedisOptions) (*Redis, error) {
	addr, n, err := c.given.next(redisKind)
	if err != nil {
		return nil, err
	}
	if opt.Name == "" {
		opt.Name = fmt.Sprintf("redis-%d", n)
	}
	return c.givenRedisAt(opt, addr), nil
}

// givenRedisAt lists the given Redis server at addr among the cluster's.
func (c *Cluster) givenRedisAt(opt RedisOptions, addr string) *Redis {
	r := newRedis(program{name: opt.Name, given: addr, p: c.givenUnit(opt.Name, addr)}, opt, c.given.g.KeyMatch)
	c.mu.Lock()
	c.redis = append(c.redis, r)
	c.mu.Unlock()
	c.AddServer(r)
	return r
}

// givenSentinelGroup hands out the given Sentinel group; its primary and
// replica are the first two given Redis servers, when given.
func (c *Cluster) givenSentinelGroup() (*SentinelGroup, error) {
	gs := c.given.g.Sentinel
	if gs == nil || len(gs.Addrs) == 0 {
		return nil, fmt.Errorf("cluster: %w: the backend wants a Sentinel group, but none was given", ErrStart)
	}
	g := &SentinelGroup{Master: gs.Master, journal: c.given.g.Journal}
	switch {
	case len(gs.Servers) > 0:
		g.Primary = c.givenRedisAt(RedisOptions{Name: "redis-primary"}, gs.Servers[0])
		if len(gs.Servers) > 1 {
			g.Replica = c.givenRedisAt(RedisOptions{Name: "redis-replica"}, gs.Servers[1])
		}
	default:
		if len(c.given.g.Addrs(redisKind)) > 0 {
			g.Primary, _ = c.givenRedis(RedisOptions{Name: "redis-primary"})
		}
		if len(c.given.g.Addrs(redisKind)) > 1 {
			g.Replica, _ = c.givenRedis(RedisOptions{Name: "redis-replica"})
		}
	}
	for i, a := range gs.Addrs {
		name := fmt.Sprintf("sentinel-%d", i)
		g.Sentinels = append(g.Sentinels, &Sentinel{program{kind: sentinelKind, name: name, given: a, p: c.givenUnit(name, a)}})
	}
	c.mu.Lock()
	c.sentinel = g
	c.mu.Unlock()
	return g, nil
}

// givenPostgres hands out the given PostgreSQL (its DSN's host and port).
func (c *Cluster) givenPostgres(ctx context.Context, opt PostgresOptions) (*Postgres, error) {
	given := c.given.g.Addrs(postgresKind)
	if len(given) == 0 {
		return nil, fmt.Errorf("cluster: %w: the backend wants PostgreSQL, but none was given", ErrStart)
	}
	dsn := given[0]
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("cluster: %w: the given PostgreSQL %q is not a postgres://host:port/... URL", ErrStart, dsn)
	}
	pg := newPostgres(program{name: "postgres", p: c.givenUnit("postgres", dsn), given: u.Host}, opt, "")
	pg.givenDSN = dsn
	c.AddServer(pg)
	return pg, nil
}

// givenEtcd hands out the given etcd members (the caller holds c.etcd.mu).
func (c *Cluster) givenEtcd() (*Etcd, error) {
	addrs := c.given.g.Addrs(etcdKind)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("cluster: %w: the backend wants etcd, but none was given", ErrStart)
	}
	e := &Etcd{}
	for i, a := range addrs {
		name := fmt.Sprintf("etcd-%d", i)
		m := newEtcdMember(program{name: name, given: a, p: c.givenUnit(name, a)})
		e.members = append(e.members, m)
		c.AddServer(m)
	}
	c.etcd.e = e
	return e, nil
}

// givenAlias is the address to dial for a server's real address on a
// given cluster ("" when there is none).
func (c *Cluster) givenAlias(addr string) string {
	if c.given == nil {
		return ""
	}
	return c.given.g.Aliases[addr]
}

// givenServer is a server known only by its address.
type givenServer struct{ name, addr string }

func (s givenServer) Name() string                   { return s.name }
func (s givenServer) Addr() string                   { return s.addr }
func (s givenServer) Stop(ctx context.Context) error { return nil }
func (s givenServer) LogPath() string                { return "" }
