// Package cluster starts and controls the real servers a run needs — Redis
// (or Valkey) servers, a Sentinel group (primary, replica, three
// Sentinels), PostgreSQL and a PgBouncer in front of it, MariaDB, etcd and
// ZooKeeper (each a package of its own under cluster/kinds) — and the
// per-(client, server) links (in-process toxiproxy) that partitions and delays act on. Where the servers come from is chosen
// once, by a provider: local processes on 127.0.0.1 with free ports
// (cluster/local, the default), one container each (cluster/docker), or
// external: servers someone else runs, named in a servers file
// (ServersFile), which the cluster adopts instead of starting
// (cluster/external makes and removes a run's namespace on them, watches
// them, and writes the standing cluster such a run can use:
// docker-compose.yml and compose.servers.yaml). Each kind of
// server registers a Kind (RegisterKind) from its package's init, linked
// by cluster/kinds/all; the provider types
// and the registry of modes are in cluster/provider, the links in
// cluster/links. Every server a Cluster starts is stopped by Close, which
// callers defer. When the harness itself is killed, its local servers die
// with it (a parent-death signal) and the next run reaps what is left, a
// later run sweeps its containers (they carry the run's labels), and a
// guard process replays the run's journal to undo what it did to
// external servers (faults on controlled containers, the run's keys).
package cluster

import (
	"github.com/locktorture/locktorture/internal/secret"

	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sync"

	"github.com/locktorture/locktorture/cluster/links"
	"github.com/locktorture/locktorture/cluster/local"
	"github.com/locktorture/locktorture/cluster/provider"
	"github.com/locktorture/locktorture/internal/owner"
	"github.com/locktorture/locktorture/internal/runca"
)

// Sentinel errors of this package.
var (
	// ErrMissingBinary is wrapped when a server's program is not on PATH.
	ErrMissingBinary = local.ErrMissingBinary
	// ErrStart is wrapped when a server does not come up.
	ErrStart = local.ErrStart
	// ErrClosed is returned when starting a server on a closed cluster.
	ErrClosed = errors.New("cluster is closed")
)

// Options configure a Cluster.
type Options struct {
	// LogDir receives each server's log file (the run's store directory).
	// Empty means the cluster's temporary directory.
	LogDir string
	// TempDir is where data directories go; empty means os.TempDir().
	TempDir string
	// Servers is where servers run: local (the default, "") or docker
	// (when the cluster/docker package is linked in; see provider.Register).
	Servers string
	// Images names the image per kind of server (or "all") in docker mode.
	Images map[string]string
	// TLS starts every server the cluster starts with TLS, from a
	// certificate authority made for the run (`security: tls`, --tls):
	// the kinds that speak TLS (a kind that cannot refuses to start).
	TLS bool
	// Locked makes every Redis and Sentinel the cluster starts ask its
	// clients for a password of the cluster's own (Secret): on a shared
	// host no other local user can use them (FLUSHALL, SHUTDOWN). Clients
	// get it as their servers' Auth (the client protocol's auth).
	Locked bool
	// RedisProgram is the program Redis servers and Sentinels run:
	// redis ("", the default) or valkey (RedisPrograms).
	RedisProgram string
}

// Server is what every server the cluster runs can do.
type Server interface {
	// Name is the server's name in logs and nemesis targets ("redis-0").
	Name() string
	// Addr is host:port.
	Addr() string
	// Stop ends the server for good.
	Stop(ctx context.Context) error
	// LogPath is the server's log file.
	LogPath() string
}

// Cluster owns the servers and simulated client processes of one run.
type Cluster struct {
	opt Options
	tmp string
	// secret is the password of a locked cluster's servers ("": none).
	secret string
	mu     sync.Mutex
	prov   Provider
	units  []Unit
	// servers lists every data server in start order (the targets of
	// server faults: "A" is the first).
	servers  []Server
	links    *links.Set
	groups   sync.Map  // kind -> *groupSlot: the run's one group of servers of a kind (Group)
	once     kindLocks // the starts of kinds with one server per run (StartOnce)
	closed   bool
	died     []string // servers that exited with nobody asking (Died)
	caMu     sync.Mutex
	ca       *runca.CA // the run's certificate authority (Options.TLS), made on first use
	caSerial int       // certificates signed so far (each start's have names of their own)
	// external, when set, makes the cluster start nothing: its starters hand
	// out the servers it names (serverset.go).
	external *externalState
}

// New makes a cluster with its own temporary directory, and removes those
// that harnesses killed with SIGKILL left behind (see owner.Reap).
func New(opt Options) (*Cluster, error) {
	tmp, err := os.MkdirTemp(opt.TempDir, owner.TempPattern)
	if err != nil {
		return nil, fmt.Errorf("cluster: temp dir: %w", err)
	}
	if err := owner.Mark(tmp); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	owner.Reap(filepath.Dir(tmp), tmp)
	if opt.LogDir == "" {
		opt.LogDir = tmp
	}
	prov, err := provider.New(context.Background(), opt.Servers, provider.Options{Images: opt.Images, LogDir: opt.LogDir, TempDir: tmp})
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &Cluster{opt: opt, tmp: tmp, prov: prov}
	if opt.Locked {
		c.secret = NewPassword()
		secret.Register(c.secret)
	}
	return c, nil
}

// Secret is the password of a locked cluster's servers (Options.Locked;
// "": the cluster is not locked).
func (c *Cluster) Secret() string { return c.secret }

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

// RedisProgram is the program choice of the cluster's Redis servers and
// Sentinels (Options.RedisProgram).
func (c *Cluster) RedisProgram() string { return c.opt.RedisProgram }

// Provider is where the cluster's servers run (local when none was made).
func (c *Cluster) Provider() Provider {
	if c.prov == nil {
		return local.NewProvider(c.tmp)
	}
	return c.prov
}

// ServerHome is where the server called name lives under the run's
// provider: its directory (the provider's Dir) and the host it listens on
// (Host). Ports are the caller's: a kind asks for its own, and some try
// again on another.
func (c *Cluster) ServerHome(ctx context.Context, name string) (dir, host string, err error) {
	pv := c.Provider()
	if dir, err = pv.Dir(name); err != nil {
		return "", "", err
	}
	if host, err = pv.Host(ctx, name); err != nil {
		return "", "", err
	}
	return dir, host, nil
}

// Mode is where the cluster's servers run: local, docker, or external
// (an external cluster: servers someone else runs).
func (c *Cluster) Mode() string {
	if c.external != nil {
		return ServersExternal
	}
	return c.Provider().Mode()
}

// Images names the image each kind of server runs from (none when local).
func (c *Cluster) Images() map[string]string { return c.Provider().Images() }

// Launch prepares a server's program through the provider and tracks it,
// so Close stops it.
func (c *Cluster) Launch(ctx context.Context, s Spec) (Unit, error) {
	u, err := c.Provider().Launch(ctx, s)
	if err != nil {
		return nil, err
	}
	if err := c.track(u); err != nil {
		_ = u.Stop(ctx)
		return nil, err
	}
	return u, nil
}

// LogPath is the log file of the server called name.
func (c *Cluster) LogPath(name string) string { return filepath.Join(c.opt.LogDir, name+".log") }

// Closed reports whether Close was called: a closed cluster starts
// nothing (ErrClosed).
func (c *Cluster) Closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// TempDir is the cluster's private temporary directory, removed by Close.
func (c *Cluster) TempDir() string { return c.tmp }

// ServersTLS reports whether the cluster starts its servers with TLS.
func (c *Cluster) ServersTLS() bool { return c.opt.TLS && c.external == nil }

// RunCA is the run's certificate authority, made on first use in the
// cluster's private temporary directory (removed with it by Close).
func (c *Cluster) RunCA() (*runca.CA, error) {
	c.caMu.Lock()
	defer c.caMu.Unlock()
	if c.ca == nil {
		ca, err := runca.New(filepath.Join(c.tmp, "tls"))
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		c.ca = ca
	}
	return c.ca, nil
}

// ServerTLS signs a certificate for the server called name at host (its
// address: an IP, or a container's) and returns the files the server
// reads, written where it runs under dir (mode 0600), and their paths
// there: the CA, its certificate and its key.
func (c *Cluster) ServerTLS(name, dir string, hosts ...string) (files []File, ca, cert, key string, err error) {
	a, err := c.RunCA()
	if err != nil {
		return nil, "", "", "", err
	}
	c.caMu.Lock()
	c.caSerial++
	n := c.caSerial
	c.caMu.Unlock()
	p, err := a.Server(fmt.Sprintf("%s-%d", name, n), hosts...)
	if err != nil {
		return nil, "", "", "", fmt.Errorf("cluster: %w", err)
	}
	ca, cert, key = path.Join(dir, "ca.pem"), path.Join(dir, "server.pem"), path.Join(dir, "server-key.pem")
	files = []File{{Path: ca, Content: a.CAPEM(), Mode: 0o600}, {Path: cert, Content: p.CertPEM, Mode: 0o600}, {Path: key, Content: p.KeyPEM, Mode: 0o600}}
	return files, ca, cert, key, nil
}

// ClientTLS signs a client certificate for user and returns the TLS files
// the harness and the run's clients use (in the cluster's private
// temporary directory).
func (c *Cluster) ClientTLS(name, user string) (*TLSFiles, error) {
	a, err := c.RunCA()
	if err != nil {
		return nil, err
	}
	c.caMu.Lock()
	c.caSerial++
	n := c.caSerial
	c.caMu.Unlock()
	p, err := a.Client(fmt.Sprintf("%s-%d", name, n), user)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return &TLSFiles{CA: a.CAFile(), Cert: p.CertFile, Key: p.KeyFile}, nil
}

// ServerByAddr finds a server (or a companion: a Sentinel) by its real
// address.
func (c *Cluster) ServerByAddr(addr string) Server {
	if a := c.externalAlias(addr); a != "" {
		return externalServer{name: addr, addr: a}
	}
	for _, s := range c.Servers() {
		if s.Addr() == addr {
			return s
		}
	}
	for _, s := range c.Companions() {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// Companioned is a group of servers (Group) that runs companions beside
// its servers (Redis's Sentinel group: its Sentinels), which are not
// among the cluster's servers (no server fault targets them) but are
// asked their versions, watched, and named to clients.
type Companioned interface {
	// Companions are the group's companions, in start order.
	Companions() []Server
	// ClientCompanions adds to g what a client dials to reach them, addr
	// giving the address it dials for each (Cluster.ClientServers).
	ClientCompanions(g *ServerSet, addr func(Server) string)
}

// Companions are the companions of every group kept (Companioned): the
// programs beside its servers that no fault acts on (Redis's Sentinels).
func (c *Cluster) Companions() []Server {
	var out []Server
	for _, g := range c.keptGroups() {
		if cg, ok := g.(Companioned); ok {
			out = append(out, cg.Companions()...)
		}
	}
	return out
}

// AddServer lists s among the cluster's servers (redis.Start and the other
// starters call it), making it a target for server faults.
func (c *Cluster) AddServer(s Server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.servers = append(c.servers, s)
}

// Servers returns the cluster's servers in start order.
func (c *Cluster) Servers() []Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Server(nil), c.servers...)
}

// Label names a server by its letter in start order ("A" is the first),
// the way faults and reports name servers; its name when it is not listed.
func (c *Cluster) Label(s Server) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.servers {
		if x.Name() == s.Name() && i < 26 {
			return string(rune('A' + i))
		}
	}
	return s.Name()
}

// Pauser is a server that can be frozen (SIGSTOP) and thawed (SIGCONT).
type Pauser interface {
	Server
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// Killer is a server that can crash (kill -9) and be started again on the
// same address.
type Killer interface {
	Server
	Kill(ctx context.Context) error
	Restart(ctx context.Context) error
}

// Logs returns the paths of every server log the harness writes (none
// for servers someone else runs: their logs are theirs).
func (c *Cluster) Logs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	seen := map[string]bool{"": true}
	for _, u := range c.units {
		if !seen[u.LogPath()] {
			seen[u.LogPath()] = true
			out = append(out, u.LogPath())
		}
	}
	return out
}

func (c *Cluster) track(u Unit) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	u.OnDeath(c.serverDied)
	c.units = append(c.units, u)
	return nil
}

// serverDied records a server that exited when neither a fault nor Close
// ended it.
func (c *Cluster) serverDied(name, logPath string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.died = append(c.died, fmt.Sprintf("%s exited by itself (its log: %s)", name, filepath.Base(logPath)))
	}
}

// ServerGone lists why in Died — a server that stopped answering, as
// cluster/external's Watch finds one someone else runs — unless the
// cluster is closed.
func (c *Cluster) ServerGone(why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.died = append(c.died, why)
	}
}

// Died lists the servers that exited during the run when no fault and no
// Close stopped them — a crash, or a SHUTDOWN from outside. A run with one
// did not test what it meant to: the harness reports it as its own failure.
func (c *Cluster) Died() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.died...)
}

// Close stops every server (resuming paused ones first) and removes the
// temporary directory. It is safe to call more than once.
func (c *Cluster) Close() error {
	c.mu.Lock()
	c.closed = true
	units := c.units
	c.units = nil
	c.mu.Unlock()
	var errs []error
	var wg sync.WaitGroup
	var emu sync.Mutex
	ctx := context.Background()
	// The links close beside the servers: a link's proxy may be dialling a
	// server whose container was killed (no answer at all, for a few
	// seconds, where a local process's port refuses at once), and
	// stopping waits for that dial.
	wg.Go(c.closeLinks)
	for _, u := range units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := u.Stop(ctx); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := c.Provider().Close(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(c.tmp); err != nil {
		errs = append(errs, fmt.Errorf("cluster: remove %s: %w", c.tmp, err))
	}
	return errors.Join(errs...)
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) { return local.FreePort() }

// NewPassword returns a random password (hex: safe in SQL and URLs).
func NewPassword() string {
	var b [18]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
