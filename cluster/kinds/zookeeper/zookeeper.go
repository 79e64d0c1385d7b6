package zookeeper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/links"

	"github.com/locktorture/locktorture/internal/secret"
)

// Options configure the run's ZooKeeper ensemble; a scenario's
// zookeeper block sets Members (`zookeeper: {members: 3}`, the older
// zookeeper_members).
//
// Members is 1 or 3 (any number from 1 to 7 works in Go); a scenario's
// block takes 1 or 3. Zero means "the ensemble already running", or 1
// when none is.
type Options struct {
	cluster.Ensemble `yaml:",inline"`
	// JVMArgs are extra java arguments for every member (before the main
	// class: -D settings of ZooKeeper's own).
	JVMArgs []string `yaml:"-"`
}

// Check refuses a scenario's size other than 1 or 3.
func (o *Options) Check() error {
	return o.CheckMembers("1 or 3", func(n int) bool { return n == 1 || n == 3 })
}

// ZooKeeper is the run's ZooKeeper ensemble (Debian's zookeeper 3.8, run
// with java directly rather than through the package's scripts): one or
// more members on 127.0.0.1, each with its own data directory under the
// cluster's TempDir and its own free client, quorum and election ports,
// the admin server off. A cluster.Cluster starts at most one ZooKeeper.
//
// The members run with fast settings for tests: a 100 ms tick (so a
// follower that hears nothing from its leader for syncLimit = 1 s drops
// it, and sessions expire within a tick of their timeout), session
// timeouts from 100 ms to 60 s (a client gets the one it asks for), no
// fsync of the transaction log (a killed member keeps what it wrote: the
// page cache outlives the process) and a short leader election.
//
// With links enabled, members of an ensemble dial one another through
// links of their own (Cluster.PeerLinks): member i's zoo.cfg lists member
// j at the addresses of its links i->j to j's quorum and election ports.
type ZooKeeper struct {
	members []*Member
	// peers are the links between members ("zookeeper-0->zookeeper-1":
	// its quorum and election links), when links are enabled.
	peers map[string][]*links.Link
}

// Member is one ZooKeeper server process.
//
// Its transaction log is written but not fsynced: a member restarted after
// a process crash keeps it, after a machine crash it would not.
type Member struct {
	cluster.Faultable
	id           int // myid, from 1
	quorumPort   int
	electionPort int
	dataDir      string
	// via are the other members' server lines as this member dials them
	// (host:quorum:election of its links to them), by id; nil: direct.
	via map[int]string
}

// maxZooKeeperMembers bounds Options.Members.
const maxZooKeeperMembers = 7

// zooKeeperTick is the members' tickTime: the unit of their timeouts and
// how often they expire sessions.
const zooKeeperTick = 100 * time.Millisecond

// zookeeperJars is the classpath of a member: Debian's zookeeper.jar (its
// manifest names the jars it needs) and slf4j-simple, which sends the
// server's log to stderr, hence to the member's log file.
var zookeeperJars = []string{"/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar"}

// zookeeper34Jars follow zookeeperJars on the classpath: ZooKeeper 3.4's
// jar (Debian 11's) names no jars in its manifest, and needs slf4j's API
// and log4j. Java skips a jar that is not there.
var zookeeper34Jars = []string{"/usr/share/java/slf4j-api.jar", "/usr/share/java/log4j-1.2.jar"}

// zookeeperJVM are the java flags of every member, chosen for a fast
// start (the C1 compiler only, a small heap, the serial collector, class
// data sharing) and for leaving nothing behind (no hsperfdata file in
// /tmp; temporary files in the member's own directory).
var zookeeperJVM = []string{
	"-Xshare:auto",
	"-XX:TieredStopAtLevel=1",
	"-XX:+UseSerialGC",
	"-Xms16m", "-Xmx256m",
	"-XX:-UsePerfData",
	"-Djava.net.preferIPv4Stack=true",
	"-Dzookeeper.jmx.log4j.disable=true",
	// Leader election: ask again every 50-400 ms, not up to a minute,
	// and give up on a peer's election port after 1 s.
	"-Dzookeeper.fastleader.minNotificationInterval=50",
	"-Dzookeeper.fastleader.maxNotificationInterval=400",
	"-Dzookeeper.cnxTimeout=1000",
	"-Dorg.slf4j.simpleLogger.showDateTime=true",
	"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
}

const zookeeperMain = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// ZooKeeper returns the run's ZooKeeper, starting it on first use and
// waiting until every member serves (answers `srvr` with a mode:
// standalone, leader or follower). Later calls return the same ensemble;
// asking for a different member count than the running one is an error.
// A missing java or zookeeper.jar names the Debian packages.
func Start(ctx context.Context, c *cluster.Cluster, opt Options) (*ZooKeeper, error) {
	return cluster.Group(c, Kind, func(cur *ZooKeeper, ok bool) (*ZooKeeper, error) {
		running := 0
		if ok {
			running = len(cur.members)
		}
		return cluster.KeptEnsemble(c, cur, running, Kind, "ZooKeeper", opt.Members, maxZooKeeperMembers, func(ms []cluster.Faultable) (*ZooKeeper, []cluster.Server) {
			z := &ZooKeeper{}
			for i, s := range ms {
				z.members = append(z.members, newZooKeeperMember(s, i+1))
			}
			return z, z.memberServers()
		}, func(n int) (*ZooKeeper, error) {
			opt.Members = n
			return startEnsemble(ctx, c, opt)
		})
	})
}

// startEnsemble starts c's own ZooKeeper of opt.Members members.
func startEnsemble(ctx context.Context, c *cluster.Cluster, opt Options) (*ZooKeeper, error) {
	if c.ServersTLS() {
		// ZooKeeper 3.8 speaks TLS only through Netty with Java key
		// stores, and go-zookeeper not at all: not done yet.
		return nil, fmt.Errorf("%w: zookeeper: security: tls (--tls) is not supported for the run's own ZooKeeper; its znodes are protected by a digest user of the run's own instead", cluster.ErrStart)
	}
	pv := c.Provider()
	bin, err := pv.Program("java", "default-jre-headless")
	if err != nil {
		return nil, err
	}
	for _, j := range zookeeperJars {
		// Where the servers run: a local file, or the image's.
		if _, err := pv.Program(filepath.Base(j), "zookeeper", filepath.Dir(j)); err != nil {
			return nil, err
		}
	}
	return cluster.StartEnsemble(ctx, c, func() (*ZooKeeper, []cluster.Server, error) {
		z, err := start(ctx, c, bin, opt)
		if err != nil {
			return nil, nil, err
		}
		return z, z.memberServers(), nil
	})
}

// start makes one attempt at starting c's members.
func start(ctx context.Context, c *cluster.Cluster, bin string, opt Options) (*ZooKeeper, error) {
	z := &ZooKeeper{}
	pv := c.Provider()
	port := cluster.Ports(pv, "zookeeper")
	for i := range opt.Members {
		name := fmt.Sprintf("zookeeper-%d", i)
		m := newZooKeeperMember(cluster.NewFaultable(Kind, name), i+1)
		var client int
		var err error
		for _, f := range []struct {
			dst   *int
			usual int
		}{{&client, 2181}, {&m.quorumPort, 2888}, {&m.electionPort, 3888}} {
			if *f.dst, err = port(f.usual); err != nil {
				return nil, err
			}
		}
		dir, host, err := c.ServerHome(ctx, name)
		if err != nil {
			return nil, err
		}
		m.dataDir = dir
		m.SetAddr(host, client)
		// Each attempt starts from an empty data directory (Dir's): a
		// member that knew other peers' ports cannot join new ones.
		z.members = append(z.members, m)
	}
	if err := peerLinks(c, z); err != nil {
		return nil, err
	}
	fail := func(err error) (*ZooKeeper, error) {
		for _, m := range z.members {
			if u := m.Unit(); u != nil {
				_ = u.Kill(ctx)
				_ = u.Stop(ctx) // closes the log
			}
		}
		var made []*links.Link
		for _, ls := range z.peers {
			made = append(made, ls...)
		}
		c.DropLinks(made)
		return nil, err
	}
	cp := strings.Join(append(slices.Clone(zookeeperJars), zookeeper34Jars...), ":")
	cds := classArchive(ctx, c, bin, cp)
	for _, m := range z.members {
		cfg := path.Join(m.dataDir, "zoo.cfg")
		args := append([]string(nil), zookeeperJVM...)
		args = append(args, cds...)
		args = append(args, "-Djava.io.tmpdir="+m.dataDir)
		args = append(args, opt.JVMArgs...)
		args = append(args, "-cp", cp, zookeeperMain, cfg)
		u, err := c.Launch(ctx, cluster.Spec{Name: m.Name(), Kind: "zookeeper", Program: bin, Args: args, Dir: m.dataDir,
			Files: []cluster.File{
				{Path: cfg, Content: []byte(zookeeperConfig(m, z.members))},
				{Path: path.Join(m.dataDir, "myid"), Content: []byte(strconv.Itoa(m.id) + "\n")},
			},
			LogPath: c.LogPath(m.Name()),
			// Stopped for good, a member's data goes with the run: a
			// SIGTERM only has the JVM run its shutdown hooks first
			// (about 0.3s each, every run).
			StopSignal: syscall.SIGKILL})
		if err != nil {
			return fail(err)
		}
		m.SetUnit(u)
	}
	var all []*cluster.Faultable
	for _, m := range z.members {
		all = append(all, &m.Faultable)
	}
	if err := cluster.StartMembers(ctx, all); err != nil {
		return fail(err)
	}
	z.lock()
	return z, nil
}

// User is the digest user a run's own ZooKeeper's znodes belong to.
const User = "locktorture"

// lock gives the run's own ensemble a digest user of the run's own (a
// fresh random password) that its clients authenticate as: the znodes
// they make carry an ACL for that user only (ZooKeeper has no
// server-wide password: anyone may still connect and make znodes of
// their own, but not read, change or delete the run's).
func (z *ZooKeeper) lock() {
	pw := cluster.NewPassword()
	digest := User + ":" + pw
	secret.Register(pw)
	secret.Register(digest)
	for _, m := range z.members {
		m.SetAuth(&cluster.Auth{Scheme: "digest", Digest: digest})
	}
}

// Auth is what the ensemble's clients authenticate with (nil: nothing).
func (z *ZooKeeper) Auth() *cluster.Auth {
	if len(z.members) == 0 {
		return nil
	}
	return z.members[0].Auth()
}

// ACL is the ACL for znodes a client with auth makes: only the
// client's own authenticated identity (ZooKeeper's "auth" scheme) when it
// has one, else anyone. Under a shared parent (root: /locktorture) anyone
// may also create, so runs of other users share it.
func ACL(auth *cluster.Auth, root bool) []zk.ACL {
	if auth == nil || auth.Scheme == "" {
		return zk.WorldACL(zk.PermAll)
	}
	acl := zk.AuthACL(zk.PermAll)
	if root {
		acl = append(zk.WorldACL(zk.PermCreate), acl...)
	}
	return acl
}

// AddAuth authenticates conn with auth (nothing without it).
func AddAuth(conn *zk.Conn, auth *cluster.Auth) error {
	if auth == nil || auth.Scheme == "" {
		return nil
	}
	if err := conn.AddAuth(auth.Scheme, []byte(auth.Digest)); err != nil {
		return fmt.Errorf("zookeeper: add auth (%s): %s", auth.Scheme, secret.Redact(err.Error()))
	}
	return nil
}

// zookeeperConfig is one member's zoo.cfg. A single member has no server
// lines and runs standalone.
func zookeeperConfig(m *Member, all []*Member) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", zooKeeperTick.Milliseconds())
	b.WriteString("initLimit=50\nsyncLimit=10\n")
	fmt.Fprintf(&b, "dataDir=%s\n", m.dataDir)
	fmt.Fprintf(&b, "clientPort=%d\nclientPortAddress=%s\n", m.Port(), m.Host())
	b.WriteString("admin.enableServer=false\n")
	b.WriteString("4lw.commands.whitelist=srvr,ruok,mntr\n")
	b.WriteString("minSessionTimeout=100\nmaxSessionTimeout=60000\n")
	b.WriteString("maxClientCnxns=0\n")
	b.WriteString("forceSync=no\npreAllocSize=1024\nsnapCount=100000\n")
	b.WriteString("reconfigEnabled=false\nelectionPortBindRetry=3\n")
	if len(all) > 1 {
		for _, o := range all {
			if v, ok := m.via[o.id]; ok {
				// Another member, as this one dials it: through links.
				fmt.Fprintf(&b, "server.%d=%s\n", o.id, v)
				continue
			}
			fmt.Fprintf(&b, "server.%d=%s:%d:%d\n", o.id, o.Host(), o.quorumPort, o.electionPort)
		}
	}
	return b.String()
}

// Members returns the members in start order.
func (z *ZooKeeper) Members() []*Member {
	return append([]*Member(nil), z.members...)
}

// memberServers returns the members as Servers, for Cluster.ClientAddr.
func (z *ZooKeeper) memberServers() []cluster.Server {
	out := make([]cluster.Server, len(z.members))
	for i, m := range z.members {
		out[i] = m
	}
	return out
}

// Leader returns the member that leads (the only one, standalone), by
// asking each its mode.
func (z *ZooKeeper) Leader(ctx context.Context) (*Member, error) {
	var errs []error
	for _, m := range z.members {
		mode, err := m.Mode(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if mode == "leader" || mode == "standalone" {
			return m, nil
		}
	}
	return nil, fmt.Errorf("zookeeper: no leader: %w", errors.Join(errs...))
}

// LeaderServer is Leader as a cluster.Server (cluster.Leading: a server
// fault's leader).
func (z *ZooKeeper) LeaderServer(ctx context.Context) (cluster.Server, error) {
	m, err := z.Leader(ctx)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// PeerLinks are the links that carry member from's traffic to member to
// (its quorum and election links of the pair in that direction), when
// links are enabled (cluster.Peered).
func (z *ZooKeeper) PeerLinks(from, to string) []*links.Link { return z.peers[from+"->"+to] }

// Peers are the members, when they dial one another through links; none
// otherwise (cluster.Peered).
func (z *ZooKeeper) Peers() []cluster.Server {
	if len(z.peers) == 0 {
		return nil
	}
	return z.memberServers()
}

// quorumAddr and electionAddr are the member's ports for its peers.
func (m *Member) quorumAddr() string {
	return net.JoinHostPort(m.Host(), strconv.Itoa(m.quorumPort))
}

// electionAddr is the member's leader-election address, host:port.
func (m *Member) electionAddr() string {
	return net.JoinHostPort(m.Host(), strconv.Itoa(m.electionPort))
}

// DataDir is the member's data directory (its zoo.cfg, myid and
// transaction log).
func (m *Member) DataDir() string { return m.dataDir }

// fourLetter sends one of ZooKeeper's four-letter commands (srvr, ruok,
// mntr: the ones the members allow) to the member's client port and
// returns the reply.
func (m *Member) fourLetter(ctx context.Context, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", m.Addr())
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", m.Name(), cmd, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", fmt.Errorf("%s %s: %w", m.Name(), cmd, err)
	}
	b, err := readFourLetter(io.LimitReader(conn, 1<<16))
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", m.Name(), cmd, err)
	}
	return string(b), nil
}

// notServing is the whole reply of a ZooKeeper not serving yet to a
// four-letter word.
const notServing = "This ZooKeeper instance is not currently serving requests\n"

// readFourLetter reads a four-letter word's reply up to its end: the
// server closing the connection, or the whole notServing reply. A
// ZooKeeper 3.8 asked while it starts, between binding its client port
// and loading its database, sends notServing and then fails to close the
// connection (a NullPointerException in its log: "Error closing a command
// socket"), so waiting for the close waited out the whole second of
// fourLetter's deadline: 4 of 12 standalone starts came up in 1.2 s
// instead of 0.3 s.
func readFourLetter(r io.Reader) ([]byte, error) {
	var b []byte
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		b = append(b, buf[:n]...)
		if errors.Is(err, io.EOF) || string(b) == notServing {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// srvrField returns the value of "Name: value" in a srvr reply.
func srvrField(reply, name string) (string, bool) {
	for _, l := range strings.Split(reply, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// Mode is the member's role as it reports it: standalone, leader,
// follower or observer; an error while it does not serve (no quorum).
func (m *Member) Mode(ctx context.Context) (string, error) {
	r, err := m.fourLetter(ctx, "srvr")
	if err != nil {
		return "", err
	}
	mode, ok := srvrField(r, "Mode")
	if !ok {
		return "", fmt.Errorf("%s: not serving: %s", m.Name(), strings.TrimSpace(r))
	}
	return mode, nil
}

// newZooKeeperMember is the member with myid id as s.
func newZooKeeperMember(s cluster.Faultable, id int) *Member {
	m := &Member{Faultable: s, id: id}
	m.SetReady(m.serving)
	return m
}

// serving reports (as an error) whether the member serves clients.
func (m *Member) serving(ctx context.Context) error {
	_, err := m.Mode(ctx)
	return err
}

// Version is the member's ZooKeeper version ("3.8.0-..."), as srvr says.
func (m *Member) Version(ctx context.Context) (string, error) {
	r, err := m.fourLetter(ctx, "srvr")
	if err != nil {
		return "", err
	}
	v, ok := srvrField(r, "Zookeeper version")
	if !ok {
		return "", fmt.Errorf("%s: srvr names no version: %s", m.Name(), strings.TrimSpace(r))
	}
	if i := strings.IndexByte(v, ','); i > 0 {
		v = v[:i]
	}
	// Debian's build leaves "-${mvngit.commit.id}" after the number.
	if i := strings.Index(v, "-$"); i > 0 {
		v = v[:i]
	}
	return v, nil
}

// zkConnectRequest is ZooKeeper's ConnectRequest frame, its length first:
// protocolVersion 0, lastZxidSeen 0, timeOut 4s, sessionId id (0: a new
// session), passwd (16 bytes), readOnly false.
func zkConnectRequest(id int64, passwd []byte) []byte {
	req := binary.BigEndian.AppendUint32(nil, 45)
	req = binary.BigEndian.AppendUint32(req, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 4000)
	req = binary.BigEndian.AppendUint64(req, uint64(id))
	req = binary.BigEndian.AppendUint32(req, 16)
	req = append(req, passwd...)
	return append(req, 0)
}

// zkCloseRequest is ZooKeeper's CloseSession frame, its length first:
// xid 1, type -11.
func zkCloseRequest() []byte {
	closeReq := binary.BigEndian.AppendUint32(nil, 8)
	closeReq = binary.BigEndian.AppendUint32(closeReq, 1)
	return binary.BigEndian.AppendUint32(closeReq, uint32(0xFFFFFFF5))
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
	req := zkConnectRequest(0, make([]byte, 16))
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
	_, _ = c.Write(zkCloseRequest())
	return nil
}

// zkDeleteRun deletes the children of root whose names begin with prefix,
// with everything under them (the lock recipe's per-key znodes; their
// ephemeral lock nodes are gone with the run's sessions).
func zkDeleteRun(ctx context.Context, servers []string, auth *cluster.Auth, root, prefix string) error {
	conn, events, err := zk.Connect(servers, 5*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	for conn.State() != zk.StateHasSession {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-events:
		}
	}
	if err := AddAuth(conn, auth); err != nil {
		return err
	}
	kids, _, err := conn.Children(root)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	var del func(p string) error
	del = func(p string) error {
		cs, _, err := conn.Children(p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		for _, c := range cs {
			if err := del(p + "/" + c); err != nil {
				return err
			}
		}
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	}
	for _, k := range kids {
		if strings.HasPrefix(k, prefix) {
			if err := del(root + "/" + k); err != nil {
				return err
			}
		}
	}
	return nil
}

// zkQuiet keeps go-zookeeper's connection chatter out of the run's output.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// Kind is the ZooKeeper kind's name.
const Kind = "zookeeper"

func init() {
	cluster.RegisterKind(cluster.Kind{
		Name:        Kind,
		Packages:    []string{"zookeeper", "default-jre-headless"},
		Image:       "zookeeper:3.9",
		StartupCost: 1500 * time.Millisecond, // starts a JVM
		Start: func(ctx context.Context, c *cluster.Cluster, o cluster.StartOptions) error {
			_, err := Start(ctx, c, cluster.OptionsOf[Options](o, Kind))
			return err
		},
		Abilities: kind{},
	})
}

// kind is what the ZooKeeper kind can do beyond starting its servers (the
// cluster abilities it implements).
type kind struct{}

func (kind) EndsSessions() bool { return true }

func (kind) ElectsLeader() bool { return true }

func (kind) Options() cluster.KindOptions {
	return &Options{Ensemble: cluster.Ensemble{Members: 1}}
}

func (kind) OlderKeys() map[string]string { return map[string]string{Kind + "_members": "members"} }

func (kind) Compose() *cluster.ComposeSpec {
	return &cluster.ComposeSpec{Port: 17050, Services: zookeeperCompose}
}

func (kind) Check(ctx context.Context, e cluster.Endpoint) error { return zkHandshake(ctx, e.Addr) }

// Credentials: a servers file's username and password are a digest
// user's.
func (kind) Credentials(addr string, a *cluster.Auth) (string, *cluster.Auth, error) {
	if a.TLS != nil {
		return "", nil, errors.New("tls is not supported for ZooKeeper (its Go client speaks no TLS); give username and password_env: a digest user")
	}
	if a.Username == "" || a.Password == "" {
		return "", nil, errors.New("ZooKeeper's digest auth needs both username and password_env")
	}
	digest := a.Username + ":" + a.Password
	secret.Register(digest)
	return addr, &cluster.Auth{Scheme: "digest", Digest: digest}, nil
}

// Cleanup deletes the znodes of the run's keys.
func (kind) Cleanup(ctx context.Context, servers []cluster.Endpoint, namespace string) error {
	var addrs []string
	for _, e := range servers {
		addrs = append(addrs, e.Addr)
	}
	if err := zkDeleteRun(ctx, addrs, servers[0].Auth, "/locktorture", namespace+":k"); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	return nil
}

// zookeeperCompose is ZooKeeper in the standing cluster: one server, run
// as the harness runs it where the image has Debian's package (no start
// script of its own), by zkServer.sh in the official image.
func zookeeperCompose(port int, image string) cluster.ComposeCluster {
	p := strconv.Itoa(port)
	script := `mkdir -p /tmp/zk
printf 'tickTime=100\ninitLimit=50\nsyncLimit=10\ndataDir=/tmp/zk\nclientPort=` + p + `\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=srvr,ruok,mntr\nminSessionTimeout=100\nmaxSessionTimeout=60000\nmaxClientCnxns=0\n' >/tmp/zoo.cfg
if [ -f /usr/share/java/zookeeper.jar ]; then
  exec java -Xmx256m -Djava.net.preferIPv4Stack=true -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar org.apache.zookeeper.server.quorum.QuorumPeerMain /tmp/zoo.cfg
fi
exec zkServer.sh start-foreground /tmp/zoo.cfg
`
	return cluster.ComposeCluster{
		Services: []cluster.ComposeService{{Name: "zookeeper", Image: image,
			Entrypoint:  []string{"sh", "-c", script},
			Healthcheck: []string{"CMD", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/" + p + " && echo ruok >&3 && grep -q imok <&3"},
			Retries:     60}},
		Servers: map[string][]cluster.ServerEntry{Kind: {cluster.ComposeEntry("zookeeper", "127.0.0.1:"+p)}},
	}
}

// peerLinks makes c's links between the members of z (before
// they start: each member's zoo.cfg names the others at its links' address)
// and sets each member's view of the others; nothing without links or with
// one member. On an error, the links made are stopped.
func peerLinks(c *cluster.Cluster, z *ZooKeeper) error {
	if len(z.members) < 2 || !c.LinksEnabled() {
		return nil
	}
	z.peers = map[string][]*links.Link{}
	var made []*links.Link
	fail := func(err error) error {
		c.DropLinks(made)
		z.peers = nil
		for _, m := range z.members {
			m.via = nil
		}
		return err
	}
	election := map[string]*links.Link{}
	for _, m := range z.members {
		m.via = map[int]string{}
		for _, o := range z.members {
			if o == m {
				continue
			}
			q, err := c.PeerLink(m, o, "quorum", o.quorumAddr())
			if err != nil {
				return fail(err)
			}
			made = append(made, q)
			e, err := c.PeerLink(m, o, "election", o.electionAddr())
			if err != nil {
				return fail(err)
			}
			made = append(made, e)
			qh, qp, err := net.SplitHostPort(q.Addr())
			if err != nil {
				return fail(err)
			}
			_, ep, err := net.SplitHostPort(e.Addr())
			if err != nil {
				return fail(err)
			}
			m.via[o.id] = fmt.Sprintf("%s:%s:%s", qh, qp, ep)
			z.peers[m.Name()+"->"+o.Name()] = []*links.Link{q, e}
			election[m.Name()+"->"+o.Name()] = e
		}
	}
	// Each election link i->j tells j to dial i back at the link j->i.
	for key, e := range election {
		from, to, _ := strings.Cut(key, "->")
		back := election[to+"->"+from]
		if err := e.RedirectElection(back.Addr()); err != nil {
			return fail(fmt.Errorf("cluster: %w", err))
		}
	}
	return nil
}
