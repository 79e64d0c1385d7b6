package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/locktorture/locktorture/internal/journal"
)

// ServerSet names servers by the addresses one client should dial: the
// external servers (someone else runs them) of a servers file, and what a
// client process gets in its open request (see
// docs/client-protocol.md: an object with a key per kind of server, a list
// of host:port — one connection string for a kind named by a DSN — and
// sentinel). A cluster made by NewExternal starts nothing: redis.Start,
// redis.StartSentinelGroup, postgres.Start and the other starters hand out the
// external servers instead, so every backend builds its clients from them
// exactly as it would from servers it started.
type ServerSet struct {
	// Servers are the servers' addresses by kind ("redis", "etcd", ...;
	// a DSN for "postgres"), in the order the backend takes them.
	Servers map[string][]string
	// Sentinel is a Sentinel group: the name its primary is monitored
	// under and the Sentinels' addresses.
	Sentinel *SentinelSet
	// Auth is what the servers ask clients to prove, by kind, one entry for
	// every server of the kind or one per address (the protocol's auth
	// object, sent beside the servers). A Sentinel group's primary is
	// under redis, its Sentinels under sentinel.
	Auth AuthSet
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
	// Journal, when set, records before each fault on an external server what
	// would undo it (docker pause, kill, the replication cut), for the
	// run's guard or a later run. Not part of the protocol.
	Journal *journal.Journal
}

// add appends a server of kind at addr.
func (g *ServerSet) add(kind, addr string) {
	if g.Servers == nil {
		g.Servers = map[string][]string{}
	}
	g.Servers[kind] = append(g.Servers[kind], addr)
}

// MarshalJSON writes the protocol's servers object: a key per kind with
// servers (a kind named by a DSN gives its one string), and sentinel.
func (g ServerSet) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for kind, addrs := range g.Servers {
		if len(addrs) == 0 {
			continue
		}
		k, _ := LookupKind(kind)
		if _, dsn := k.Abilities.(DSNAddressed); dsn {
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
func (g *ServerSet) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*g = ServerSet{}
	for kind, raw := range m {
		if kind == "sentinel" {
			if string(raw) == "null" {
				continue
			}
			g.Sentinel = &SentinelSet{}
			if err := json.Unmarshal(raw, g.Sentinel); err != nil {
				return fmt.Errorf("sentinel: %w", err)
			}
			continue
		}
		var one string
		if err := json.Unmarshal(raw, &one); err == nil {
			if one != "" {
				g.add(kind, one)
			}
			continue
		}
		var addrs []string
		if err := json.Unmarshal(raw, &addrs); err != nil {
			return fmt.Errorf("%s: a list of addresses or one string: %w", kind, err)
		}
		for _, a := range addrs {
			g.add(kind, a)
		}
	}
	return nil
}

// SentinelSet is a Sentinel group someone else runs.
type SentinelSet struct {
	// Master is the name the Sentinels monitor the primary under.
	Master string `json:"master"`
	// Addrs are the Sentinels' addresses.
	Addrs []string `json:"addrs"`
	// Servers are the group's Redis servers, primary first, when known
	// (a servers file may name them). Not part of the protocol.
	Servers []string `json:"-"`
	// ServersAuth is what each of Servers asks. Not part of the protocol.
	ServersAuth []*Auth `json:"-"`
	// MasterAuth is what the primary asks of the clients the Sentinels
	// send there (in the protocol: auth.redis).
	MasterAuth *Auth `json:"-"`
}

// externalState is what an external cluster has handed out so far.
type externalState struct {
	servers ServerSet
	mu      sync.Mutex
	used    map[string]int // servers handed out, by kind
}

// next is the next external server of kind and how many were handed out
// before it.
func (s *externalState) next(kind string) (addr string, n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used == nil {
		s.used = map[string]int{}
	}
	n = s.used[kind]
	s.used[kind]++
	external := s.servers.Addrs(kind)
	if n >= len(external) {
		return "", n, fmt.Errorf("cluster: %w: the backend wants %s server %d, but the servers file names only %d", ErrStart, kind, n+1, len(external))
	}
	return external[n], n, nil
}

// NewExternal returns a cluster that starts no server: it hands out the
// servers g names. Its Close stops nothing.
func NewExternal(g ServerSet) *Cluster {
	return &Cluster{external: &externalState{servers: g}}
}

// Addrs returns the addresses named for a kind of server ("redis", "etcd",
// "zookeeper", "postgres" — its DSN —, or any other).
func (g ServerSet) Addrs(kind string) []string { return g.Servers[kind] }

// hostPort is a server's address: the external one, or host:port (host
// empty: 127.0.0.1).
func hostPort(external, host string, port int) string {
	if external != "" {
		return external
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// ExternalUnit is what stands for an external server's program: a container the
// harness controls through docker when Controls names one for addr, else
// nothing a fault can act on.
func (c *Cluster) ExternalUnit(name, addr string) Unit {
	if ctr := c.external.servers.Controls[addr]; ctr != "" {
		u := &controlledUnit{name: name, container: ctr, journal: c.external.servers.Journal}
		// Close "stops" it: thaws or starts it again if a fault left it
		// paused or killed, so the server is left as the run found it.
		c.mu.Lock()
		c.units = append(c.units, u)
		c.mu.Unlock()
		return u
	}
	return uncontrolledUnit{name: name}
}

// KeyMatch is the SCAN pattern of the run's own keys on servers someone
// else runs ("" otherwise: every key is the run's).
func (c *Cluster) KeyMatch() string {
	if c.external == nil {
		return ""
	}
	return c.external.servers.KeyMatch
}

// External is the servers a cluster made by NewExternal hands out (nil
// for a cluster that starts its own).
func (c *Cluster) External() *ServerSet {
	if c.external == nil {
		return nil
	}
	return &c.external.servers
}

// NextExternal hands out the next server of kind someone else runs: its
// address and how many were handed out before it (an error when the
// servers file names no more).
func (c *Cluster) NextExternal(kind string) (addr string, n int, err error) {
	return c.external.next(kind)
}

// handOut is every server of kind someone else runs, as programs named
// name(i) with their address, control and credentials, and whether the
// cluster is one that hands out servers at all (then an error when it
// names none of kind: what, in words, is what the backend wanted).
func (c *Cluster) handOut(kind, what string, name func(i int) string) ([]program, bool, error) {
	if c.external == nil {
		return nil, false, nil
	}
	addrs := c.external.servers.Addrs(kind)
	if len(addrs) == 0 {
		return nil, true, fmt.Errorf("cluster: %w: the backend wants %s, but the servers file names none", ErrStart, what)
	}
	ps := make([]program, len(addrs))
	for i, a := range addrs {
		ps[i] = program{name: name(i), external: a, p: c.ExternalUnit(name(i), a), auth: c.external.servers.Auth.For(kind, i)}
	}
	return ps, true, nil
}

// externalAlias is the address to dial for a server's real address on a
// external cluster ("" when there is none).
func (c *Cluster) externalAlias(addr string) string {
	if c.external == nil {
		return ""
	}
	return c.external.servers.Aliases[addr]
}

// externalServer is a server known only by its address.
type externalServer struct{ name, addr string }

func (s externalServer) Name() string                   { return s.name }
func (s externalServer) Addr() string                   { return s.addr }
func (s externalServer) Stop(ctx context.Context) error { return nil }
func (s externalServer) LogPath() string                { return "" }
