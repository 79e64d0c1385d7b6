package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/locktorture/locktorture/cluster"
)

// Options configure the run's etcd; a scenario's etcd block sets
// Members (`etcd: {members: 3}`, the older etcd_members): 1 or 3 (any
// number from 1 to 7 works). Zero means "the etcd already running", or 1
// when none is.
type Options struct {
	cluster.Ensemble `yaml:",inline"`
	// Args are extra etcd arguments for every member.
	Args []string `yaml:"-"`
}

// Check refuses a size outside 1 to 7.
func (o *Options) Check() error {
	return o.CheckMembers(fmt.Sprintf("from 1 to %d", maxEtcdMembers), func(n int) bool { return n >= 1 && n <= maxEtcdMembers })
}

// Etcd is the run's etcd cluster (Debian's etcd-server 3.4): one or more
// members on 127.0.0.1, each with its own data directory under the
// cluster's TempDir and its own free client and peer ports. A cluster.Cluster
// starts at most one Etcd; the lock backend and the etcd resource share it.
//
// The members run with fast settings for tests: a 50 ms heartbeat and a
// 500 ms election timeout, which also make the smallest lease TTL etcd
// grants 1 s (etcd raises a shorter TTL to 1.5 election timeouts, rounded
// up to whole seconds). etcd 3.4 has no --unsafe-no-fsync: the WAL is
// fsynced, so a killed member comes back with its data.
type Etcd struct {
	members []*Member
}

// Member is one etcd member process. etcd fsyncs its log: a member
// restarted after a kill comes back with everything it had acknowledged.
type Member struct {
	cluster.Faultable
	peerPort int
	dataDir  string
	tlsArgs  []string // with TLS, its certificate's flags
}

// newEtcdMember is an etcd member as s.
func newEtcdMember(s cluster.Faultable) *Member {
	m := &Member{Faultable: s}
	m.SetReady(m.health)
	return m
}

// endpointMember is the member someone else runs at e, with e's
// credentials.
func endpointMember(e cluster.Endpoint) *Member {
	s := cluster.NewFaultable(Kind, "etcd "+e.Addr)
	s.SetExternal(e.Addr)
	s.SetAuth(e.Auth)
	return newEtcdMember(s)
}

// maxEtcdMembers bounds Options.Members.
const maxEtcdMembers = 7

// Start returns c's etcd, starting it on first use and waiting until
// every member answers a health check (a leader exists and a read through
// raft succeeds). Later calls return the same cluster; asking for a
// different member count than the running one is an error. A missing etcd
// program names the Debian package etcd-server.
func Start(ctx context.Context, c *cluster.Cluster, opt Options) (*Etcd, error) {
	return cluster.Group(c, Kind, func(cur *Etcd, ok bool) (*Etcd, error) {
		running := 0
		if ok {
			running = len(cur.members)
		}
		return cluster.KeptEnsemble(c, cur, running, Kind, "etcd", opt.Members, maxEtcdMembers, func(ms []cluster.Faultable) (*Etcd, []cluster.Server) {
			e := &Etcd{}
			for _, s := range ms {
				e.members = append(e.members, newEtcdMember(s))
			}
			return e, e.memberServers()
		}, func(n int) (*Etcd, error) {
			opt.Members = n
			return startEnsemble(ctx, c, opt)
		})
	})
}

// startEnsemble starts c's own etcd of opt.Members members.
func startEnsemble(ctx context.Context, c *cluster.Cluster, opt Options) (*Etcd, error) {
	bin, err := c.Provider().Program("etcd", "etcd-server")
	if err != nil {
		return nil, err
	}
	return cluster.StartEnsemble(ctx, c, func() (*Etcd, []cluster.Server, error) {
		e, err := start(ctx, c, bin, opt)
		if err != nil {
			return nil, nil, err
		}
		return e, e.memberServers(), nil
	})
}

// start makes one attempt at starting c's members.
func start(ctx context.Context, c *cluster.Cluster, bin string, opt Options) (*Etcd, error) {
	e := &Etcd{}
	var peers []string
	pv := c.Provider()
	port := cluster.Ports(pv, "etcd")
	// With TLS the harness's and the clients' certificate names a user
	// etcd does not have: it alone authenticates no one (etcd takes a
	// certificate's name as the user), the run's password is still asked.
	var clientFiles *cluster.TLSFiles
	if c.ServersTLS() {
		var err error
		if clientFiles, err = c.ClientTLS("etcd-client", "locktorture"); err != nil {
			return nil, err
		}
	}
	tlsFiles := map[*Member][]cluster.File{}
	for i := range opt.Members {
		cp, err := port(2379)
		if err != nil {
			return nil, err
		}
		pp, err := port(2380)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("etcd-%d", i)
		dir, host, err := c.ServerHome(ctx, name)
		if err != nil {
			return nil, err
		}
		s := cluster.NewFaultable(Kind, name)
		s.SetAddr(host, cp)
		m := newEtcdMember(s)
		m.peerPort, m.dataDir = pp, path.Join(dir, "data")
		if clientFiles != nil {
			m.SetAuth(&cluster.Auth{TLS: clientFiles})
			files, ca, cert, key, err := c.ServerTLS(name, dir, host)
			if err != nil {
				return nil, err
			}
			tlsFiles[m] = files
			m.tlsArgs = etcdTLSArgs(ca, cert, key)
		}
		// Each attempt starts from an empty data directory (Dir's): a
		// member bootstrapped with other peers' ports cannot join new ones.
		e.members = append(e.members, m)
		peers = append(peers, name+"="+m.peerURL())
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	token := "locktorture-" + hex.EncodeToString(b[:])
	fail := func(err error) (*Etcd, error) {
		for _, m := range e.members {
			if u := m.Unit(); u != nil {
				_ = u.Kill(ctx)
				_ = u.Stop(ctx) // closes the log
			}
		}
		return nil, err
	}
	for _, m := range e.members {
		u, err := c.Launch(ctx, cluster.Spec{Name: m.Name(), Kind: "etcd", Program: bin, Shell: etcdStart,
			Args: etcdArgs(m, strings.Join(peers, ","), token, opt.Args), Dir: path.Dir(m.dataDir), Files: tlsFiles[m],
			LogPath: c.LogPath(m.Name()),
			// Stopped for good, a member's data goes with the run: on a
			// SIGTERM a member cut from its quorum went on campaigning
			// until the 3s stop timeout killed it anyway.
			StopSignal: syscall.SIGKILL})
		if err != nil {
			return fail(err)
		}
		m.SetUnit(u)
	}
	var all []*cluster.Faultable
	for _, m := range e.members {
		all = append(all, &m.Faultable)
	}
	if err := cluster.StartMembers(ctx, all); err != nil {
		return fail(err)
	}
	if err := e.lock(ctx, clientFiles); err != nil {
		return fail(err)
	}
	return e, nil
}

// etcdArgs are one member's command line.
func etcdArgs(m *Member, initialCluster, token string, extra []string) []string {
	args := []string{
		"--name", m.Name(),
		"--data-dir", m.dataDir,
		"--listen-client-urls", m.clientURL(),
		"--advertise-client-urls", m.clientURL(),
		"--listen-peer-urls", m.peerURL(),
		"--initial-advertise-peer-urls", m.peerURL(),
		"--initial-cluster", initialCluster,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", token,
		"--heartbeat-interval", "50",
		"--election-timeout", "500",
		"--snapshot-count", "10000",
		"--auto-compaction-mode", "revision",
		"--auto-compaction-retention", "10000",
	}
	args = append(args, m.tlsArgs...)
	return append(args, extra...)
}

// etcdStart is the script every member runs ($1 its program, its
// arguments after): etcd 3.4 and later log through zap to stderr, and hash
// the run's random password (lock) at bcrypt's lowest cost, which adds
// nothing to a random secret but CPU at every client's login; etcd 3.3
// (Debian 11's) has none of these flags, and logs to stderr anyway.
const etcdStart = `bin="$1"; shift
case "$("$bin" --version 2>/dev/null)" in
*"etcd Version: 3.3."* | *"etcd Version: 3.2."*) exec "$bin" "$@" ;;
esac
exec "$bin" "$@" --logger zap --log-outputs stderr --bcrypt-cost 4
`

// etcdTLSArgs make a member speak TLS with clients and peers alike, and
// ask each for a certificate of the run's CA.
func etcdTLSArgs(ca, cert, key string) []string {
	return []string{
		"--cert-file", cert, "--key-file", key, "--trusted-ca-file", ca, "--client-cert-auth",
		"--peer-cert-file", cert, "--peer-key-file", key, "--peer-trusted-ca-file", ca, "--peer-client-cert-auth",
	}
}

// Members returns the members in start order.
func (e *Etcd) Members() []*Member { return append([]*Member(nil), e.members...) }

// memberServers returns the members as Servers, for Cluster.ClientAddr.
func (e *Etcd) memberServers() []cluster.Server {
	out := make([]cluster.Server, len(e.members))
	for i, m := range e.members {
		out[i] = m
	}
	return out
}

// Endpoints returns every member's client address (host:port), in order.
func (e *Etcd) Endpoints() []string {
	out := make([]string, len(e.members))
	for i, m := range e.members {
		out[i] = m.Addr()
	}
	return out
}

// Leader returns the member that leads, by asking the members in turn
// (through etcd's JSON gateway, /v3/maintenance/status) until one answers.
func (e *Etcd) Leader(ctx context.Context) (*Member, error) {
	var errs []error
	for _, m := range e.members {
		st, err := m.status(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Leader == 0 {
			errs = append(errs, fmt.Errorf("%s: no leader", m.Name()))
			continue
		}
		for _, o := range e.members {
			if id, err := o.id(ctx); err == nil && id == st.Leader {
				return o, nil
			}
		}
		errs = append(errs, fmt.Errorf("%s: leader %x is not among the members that answer", m.Name(), st.Leader))
	}
	return nil, fmt.Errorf("etcd: no leader: %w", errors.Join(errs...))
}

// LeaderServer is Leader as a cluster.Server (cluster.Leading: a server
// fault's leader).
func (e *Etcd) LeaderServer(ctx context.Context) (cluster.Server, error) {
	m, err := e.Leader(ctx)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// peerAddr is the member's peer (raft) address, host:port.
func (m *Member) peerAddr() string {
	return net.JoinHostPort(m.Host(), strconv.Itoa(m.peerPort))
}

func (m *Member) clientURL() string { return m.scheme() + "://" + m.Addr() }
func (m *Member) peerURL() string   { return m.scheme() + "://" + m.peerAddr() }

// scheme is https when the member speaks TLS.
func (m *Member) scheme() string {
	if a := m.Auth(); a != nil && a.TLS != nil {
		return "https"
	}
	return "http"
}

// DataDir is the member's data directory.
func (m *Member) DataDir() string { return m.dataDir }

// Status is what a member says about itself.
type Status struct {
	// ID is the member's id; Leader the id of the member it follows (0:
	// none known).
	ID, Leader uint64
	// RaftTerm is the member's raft term.
	RaftTerm uint64
}

// httpClient is for health and status checks: no connection outlives a call.
var httpClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// get does one short HTTP request to the member's client port.
func (m *Member) get(ctx context.Context, method, path, body string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	hc, err := m.httpClient()
	if err != nil {
		return nil, err
	}
	return etcdHTTP(ctx, hc, m.Name(), m.clientURL(), method, path, body, 1<<16)
}

// etcdHTTP sends one request to an etcd member's HTTP API at base and
// returns at most limit bytes of its answer; a status other than 200 is an
// error naming who (a member's name or address) and the path.
func etcdHTTP(ctx context.Context, hc *http.Client, who, base, method, path, body string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("%s %s: %s: %s", who, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return b, nil
}

// health asks /health, which etcd answers true only when the member knows
// a leader and a read through raft succeeds.
func (m *Member) health(ctx context.Context) error {
	b, err := m.get(ctx, http.MethodGet, "/health", "")
	if err != nil {
		return err
	}
	var h struct {
		Health string `json:"health"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("%s /health: %w", m.Name(), err)
	}
	if h.Health != "true" {
		return fmt.Errorf("%s: unhealthy: %s", m.Name(), strings.TrimSpace(string(b)))
	}
	return nil
}

// id is the member's raft id.
func (m *Member) id(ctx context.Context) (uint64, error) {
	st, err := m.status(ctx)
	return st.ID, err
}

// Kind is the etcd kind's name.
const Kind = "etcd"

func init() {
	cluster.RegisterKind(cluster.Kind{
		Name:        Kind,
		Packages:    []string{"etcd-server", "etcd-client"}, // etcd-client: etcdctl, for compose's health check
		Image:       "gcr.io/etcd-development/etcd:v3.5.17",
		StartupCost: 500 * time.Millisecond, // a Go binary
		Start: func(ctx context.Context, c *cluster.Cluster, o cluster.StartOptions) error {
			_, err := Start(ctx, c, cluster.OptionsOf[Options](o, Kind))
			return err
		},
		Abilities: kind{},
	})
}

// kind is what the etcd kind can do beyond starting its servers (the
// cluster abilities it implements).
type kind struct{}

func (kind) TLSModes() []string { return []string{cluster.ServersLocal, cluster.ServersDocker} }

func (kind) EndsSessions() bool { return true }

func (kind) ElectsLeader() bool { return true }

// MembersUnlinked: topology: members cannot act on its members.
func (kind) MembersUnlinked() string {
	return "a member's id is a hash of its peer URLs, which every member must agree on, and members dial the URLs the cluster's membership records, so a member cannot reach each other member through a link of its own (ZooKeeper members can)"
}

func (kind) Options() cluster.KindOptions {
	return &Options{Ensemble: cluster.Ensemble{Members: 1}}
}

func (kind) OlderKeys() map[string]string { return map[string]string{Kind + "_members": "members"} }

func (kind) Check(ctx context.Context, e cluster.Endpoint) error {
	return endpointMember(e).check(ctx)
}

func (kind) Compose() *cluster.ComposeSpec {
	return &cluster.ComposeSpec{Port: 17040, Services: etcdCompose}
}

// Cleanup deletes the run's keys through the first member that answers:
// one member is the whole cluster.
func (kind) Cleanup(ctx context.Context, servers []cluster.Endpoint, namespace string) error {
	var errs []error
	for _, e := range servers {
		a := e.Addr
		err := etcdDeleteHolding(ctx, e, "locktorture/", namespace+":k")
		if err == nil {
			return nil // one member is the whole cluster
		}
		errs = append(errs, fmt.Errorf("etcd %s: %w", a, err))
	}
	return errors.Join(errs...)
}

// Version is the member's etcd version, as /version says (etcdserver).
func (m *Member) Version(ctx context.Context) (string, error) {
	b, err := m.get(ctx, http.MethodGet, "/version", "")
	if err != nil {
		return "", err
	}
	var v struct {
		Server string `json:"etcdserver"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.Server == "" {
		return "", fmt.Errorf("%s /version: %q", m.Name(), b)
	}
	return v.Server, nil
}

// etcdCompose is etcd in the standing cluster: a 3-member ensemble.
func etcdCompose(port int, image string) cluster.ComposeCluster {
	url := func(p int) string { return "http://127.0.0.1:" + strconv.Itoa(p) }
	var initial []string
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("e%d=%s", i, url(port+2*i+1)))
	}
	cc := cluster.ComposeCluster{Servers: map[string][]cluster.ServerEntry{}}
	for i := range 3 {
		name, client, peer := fmt.Sprintf("etcd-%d", i), port+2*i, port+2*i+1
		cc.Services = append(cc.Services, cluster.ComposeService{Name: name, Image: image,
			Command: []string{"etcd", "--name", fmt.Sprintf("e%d", i), "--data-dir", fmt.Sprintf("/tmp/etcd-e%d", i),
				"--listen-client-urls", url(client), "--advertise-client-urls", url(client),
				"--listen-peer-urls", url(peer), "--initial-advertise-peer-urls", url(peer),
				"--initial-cluster", strings.Join(initial, ","),
				"--initial-cluster-token", "locktorture", "--initial-cluster-state", "new"},
			Healthcheck: []string{"CMD", "etcdctl", "--endpoints=" + url(client), "endpoint", "health"},
			Retries:     60})
		cc.Servers[Kind] = append(cc.Servers[Kind], cluster.ComposeEntry(name, "127.0.0.1:"+strconv.Itoa(client)))
	}
	return cc
}
