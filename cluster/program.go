package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/locktorture/locktorture/cluster/local"
)

// program is what every server of the cluster has, whatever its kind and
// wherever it runs: a name, the address clients dial, and the unit that
// runs it (for a server someone else runs, a unit that can at most be
// controlled through docker). The kinds' types embed it.
type program struct {
	p        Unit
	kind     string // the name of its Kind
	name     string
	host     string
	port     int    // the port clients dial
	external string // the address of a server someone else runs (serverset.go)
	auth     *Auth  // what it asks clients to prove (nil: nothing)
}

// Auth is what the server asks its clients to prove (nil: nothing).
func (s *program) Auth() *Auth { return s.auth }

// Name is the server's name in logs and nemesis targets ("redis-0").
func (s *program) Name() string { return s.name }

// Kind is the name of the server's kind ("redis").
func (s *program) Kind() string { return s.kind }

// Addr is the address clients dial, host:port.
func (s *program) Addr() string { return hostPort(s.external, s.host, s.port) }

// Port is the port clients dial.
func (s *program) Port() int { return s.port }

// LogPath is the server's log file.
func (s *program) LogPath() string { return s.p.LogPath() }

// unit is what runs the server (or stands for one someone else runs).
func (s *program) unit() Unit { return s.p }

// Stop ends the server for good (a server someone else runs is left as
// the run found it).
func (s *program) Stop(ctx context.Context) error { return s.p.Stop(ctx) }

// Faultable is a program that server faults act on: it pauses, dies and
// comes back. ready says whether it serves again after a restart.
type Faultable struct {
	program
	ready func(context.Context) error
}

// Companion is a program a kind's group runs beside its servers (a
// Sentinel beside its Redis servers): named, dialled, asked its version
// and watched as a server is, but no server fault acts on it.
type Companion struct{ program }

// NewCompanion is a companion of kind named name, not started yet.
func NewCompanion(kind, name string) Companion {
	return Companion{program: program{kind: kind, name: name}}
}

// NewFaultable is a server of kind named name, not started yet
// (Cluster.StartSpec starts it).
func NewFaultable(kind, name string) Faultable {
	return Faultable{program: program{kind: kind, name: name}}
}

// SetReady sets how the server says it serves: asked after a start and
// after a restart.
func (s *Faultable) SetReady(ready func(context.Context) error) { s.ready = ready }

// SetAddr sets where the server listens: host and the port its clients
// dial.
func (s *program) SetAddr(host string, port int) { s.host, s.port = host, port }

// Host is the host the server listens on ("" for one someone else runs).
func (s *program) Host() string { return s.host }

// SetAuth sets what the server asks its clients to prove.
func (s *program) SetAuth(a *Auth) { s.auth = a }

// Unit is what runs the server (nil before it is launched).
func (s *program) Unit() Unit { return s.p }

// SetUnit sets what runs the server (Cluster.Launch's unit).
func (s *program) SetUnit(u Unit) { s.p = u }

// SetExternal makes the server one someone else runs at addr (host:port),
// which the harness dials.
func (s *program) SetExternal(addr string) { s.external = addr }

// PID is the server's process id, or 0 when it is not running (or not a
// local process).
func (s *Faultable) PID() int {
	if p, ok := s.p.(*local.Proc); ok {
		return p.PID()
	}
	return 0
}

// Running reports whether the server is up.
func (s *Faultable) Running() bool { return s.p.Running() }

// Pause freezes the server (SIGSTOP to every process of it; in a
// container, docker pause), as a stalled machine would be.
func (s *Faultable) Pause(ctx context.Context) error { return s.p.Pause(ctx) }

// Resume thaws a paused server.
func (s *Faultable) Resume(ctx context.Context) error { return s.p.Resume(ctx) }

// Kill ends the server with SIGKILL, as a crash would, and returns once
// no process of it is left.
func (s *Faultable) Kill(ctx context.Context) error { return s.p.Kill(ctx) }

// Restart starts a killed or stopped server again on the same address
// with the same files, and waits until it serves (a member of an
// ensemble needs a quorum up). What it keeps is its kind's: see the kind's
// type.
func (s *Faultable) Restart(ctx context.Context) error {
	return restartUnit(ctx, s.name, s.p, s.ready)
}

// ProgramSpec is a server of a kind that runs as one program on one
// port: what startProgram needs to start it (local processes and
// containers alike) or to hand out one someone else runs.
type ProgramSpec struct {
	// Kind is the name of the server's kind (its image, its servers-file
	// key); servers are named "<kind>-<n>" unless Name says otherwise.
	Kind string
	// Name is the server's name; empty means "<kind>-<n>".
	Name string
	// Program is the program to run; Package the Debian package that
	// installs it (named when it is missing).
	Program, Package string
	// Port is the kind's usual port (a container's; a local process gets
	// a free one).
	Port int
	// Args is the command line for a server listening on host:port with
	// its files in dir.
	Args func(host string, port int, dir string) []string
	// Ready reports (as an error) whether the server at addr serves.
	Ready func(ctx context.Context, addr string) error
	// Version asks the server at addr its version (nil: it cannot say).
	Version func(ctx context.Context, addr string) (string, error)
}

// Program is a server of a kind started by startProgram.
type Program struct {
	Faultable
	version func(ctx context.Context, addr string) (string, error)
}

// Version is the server's version, as it reports it.
func (s *Program) Version(ctx context.Context) (string, error) {
	if s.version == nil {
		return "", fmt.Errorf("%s: no way to ask its version", s.name)
	}
	return s.version(ctx, s.Addr())
}

// startProgram starts one more server of spec's kind and waits until it
// serves; on a cluster of servers someone else runs it hands out the next
// one of that kind instead. Every mode serves it: a kind needs no more
// than its spec.
func (c *Cluster) startProgram(ctx context.Context, spec ProgramSpec) (*Program, error) {
	s := &Program{version: spec.Version}
	s.kind = spec.Kind
	s.ready = func(ctx context.Context) error { return spec.Ready(ctx, s.Addr()) }
	name := func(n int) string {
		if spec.Name != "" {
			return spec.Name
		}
		return fmt.Sprintf("%s-%d", spec.Kind, n)
	}
	err := c.Place(ctx, &s.Faultable, name, Placement{Kind: spec.Kind, Program: spec.Program, Package: spec.Package, Usual: spec.Port, Args: spec.Args})
	if err != nil {
		return nil, err
	}
	c.AddServer(s)
	return s, nil
}

// Placement is how a provider starts one server of a kind that is one
// program on one port: the program, its Debian package, the kind's usual
// port, and its command line for a host, port and directory.
type Placement struct {
	// Kind is the name of the server's kind; Program the program to run
	// and Package the Debian package that installs it.
	Kind, Program, Package string
	// Usual is the kind's usual port (a container's; a local process
	// gets a free one).
	Usual int
	// Args is the command line for a server at host:port with its files
	// in dir.
	Args func(host string, port int, dir string) []string
	// Prepare, when set, completes the spec of a server at host:port with
	// its files in dir before it starts: what it needs written there (a
	// 0600 configuration holding the run's password, TLS files) and the
	// arguments that name them.
	Prepare func(sp *Spec, host string, port int, dir string) error
}

// Place gives s, one more server of pl's kind, its place — named name(n),
// n the number of that kind before it: on a cluster of servers someone
// else runs, the next one of the kind named there (its address, its
// control, its credentials); otherwise the program pl describes, started
// by the provider and ready. A kind's starter calls it and never asks
// which mode runs.
func (c *Cluster) Place(ctx context.Context, s *Faultable, name func(n int) string, pl Placement) error {
	if c.external != nil {
		addr, n, err := c.external.next(pl.Kind)
		if err != nil {
			return err
		}
		s.name, s.external, s.p = name(n), addr, c.ExternalUnit(name(n), addr)
		s.auth = c.external.servers.Auth.For(pl.Kind, n)
		return nil
	}
	s.name = name(c.started(pl.Kind))
	return c.startOne(ctx, s, pl)
}

// started is how many servers of kind the cluster runs so far.
func (c *Cluster) started(kind string) int {
	n := 0
	for _, s := range c.Servers() {
		if kindOf(s) == kind {
			n++
		}
	}
	return n
}

// startOne starts s (its name set) as pl's program on the kind's usual
// port (a free one locally), with the command line pl gives, and waits
// until s.ready.
func (c *Cluster) startOne(ctx context.Context, s *Faultable, pl Placement) error {
	bin, err := c.Provider().Program(pl.Program, pl.Package)
	if err != nil {
		return err
	}
	return c.StartSpec(ctx, s, pl.Usual, func(host string, port int, dir string) (Spec, error) {
		sp := Spec{Kind: pl.Kind, Program: bin, Args: pl.Args(host, port, dir), Dir: dir}
		if pl.Prepare != nil {
			if err := pl.Prepare(&sp, host, port, dir); err != nil {
				return Spec{}, err
			}
		}
		return sp, nil
	})
}

// StartSpec starts s (its name set) on the kind's usual port (a free one
// locally) as the program spec describes for that host, port and
// directory (its Name and LogPath are s's), and waits until s.ready. A
// local free port can be taken by someone else before the server binds
// it: where the provider says so, it tries again on another.
func (c *Cluster) StartSpec(ctx context.Context, s *Faultable, usual int, spec func(host string, port int, dir string) (Spec, error)) error {
	pv := c.Provider()
	dir, host, err := c.ServerHome(ctx, s.name)
	if err != nil {
		return err
	}
	s.host = host
	attempts := 1
	if r, ok := pv.(PortRacer); ok && r.PortsRace() {
		attempts = 3
	}
	var lastErr error
	for range attempts {
		if s.port, err = pv.Port(usual); err != nil {
			return err
		}
		sp, err := spec(s.host, s.port, dir)
		if err != nil {
			return err
		}
		sp.Name, sp.LogPath = s.name, filepath.Join(c.opt.LogDir, s.name+".log")
		s.p, err = c.Launch(ctx, sp)
		if err != nil {
			return err
		}
		// An exit during start-up is this start's failure (and another
		// attempt may follow), not a server that died mid-run.
		s.p.OnDeath(nil)
		if err := s.p.Start(ctx); err != nil {
			return err
		}
		if lastErr = WaitUnit(ctx, s.name, s.p, s.ready); lastErr == nil {
			s.p.OnDeath(c.serverDied)
			select {
			case <-s.p.Exited():
				c.serverDied(s.name, s.p.LogPath())
			default:
			}
			return nil
		}
		_ = s.p.Kill(ctx)
		_ = s.p.Stop(ctx)
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("cluster: %w", lastErr)
}

// PortRacer is a provider whose ports are free ports of a machine shared
// with others: one can be taken between its choice and its use.
type PortRacer interface {
	PortsRace() bool
}

// StartEnsemble starts an ensemble (etcd, ZooKeeper) with attempt, which
// starts every member anew and returns them: a free port can be taken
// between asking and binding, so it starts over (fresh ports, empty
// directories) up to three times. The members of the attempt that serves
// are listed among the cluster's servers.
func StartEnsemble[T any](ctx context.Context, c *Cluster, attempt func() (T, []Server, error)) (T, error) {
	var lastErr error
	for range 3 {
		v, members, err := attempt()
		if err == nil {
			for _, m := range members {
				c.AddServer(m)
			}
			return v, nil
		}
		lastErr = err
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			break
		}
	}
	var none T
	return none, fmt.Errorf("cluster: %w", lastErr)
}

// ensemble is an ensemble of kind (what, in words): on a cluster of
// servers someone else runs, every member named there, each made by adopt
// from its program; otherwise the members start starts (StartEnsemble).
// The members are listed among the cluster's servers. A kind calls it
// and never asks which mode runs.
func ensemble[T any](c *Cluster, kind, what string, adopt func(ps []program) (T, []Server), start func() (T, error)) (T, error) {
	ps, given, err := c.handOut(kind, what, func(i int) string { return fmt.Sprintf("%s-%d", kind, i) })
	if !given {
		return start()
	}
	if err != nil {
		var none T
		return none, err
	}
	v, members := adopt(ps)
	for _, m := range members {
		c.AddServer(m)
	}
	return v, nil
}

// one is the one server of kind a run has: on a cluster of servers
// someone else runs, the first one named there, made by adopt from its
// address (a DSN) and its program (named name, its control, its
// credentials), or — missing says what the run wanted — an error when none
// is; otherwise the one start starts. A kind calls it and never asks
// which mode runs.
func one[T any](c *Cluster, kind, name, missing string, adopt func(addr string, p program) (T, error), start func() (T, error)) (T, error) {
	ps, given, err := c.handOut(kind, "", func(int) string { return name })
	if !given {
		return start()
	}
	if err != nil {
		var none T
		return none, fmt.Errorf("cluster: %w: %s", ErrStart, missing)
	}
	p := ps[0]
	p.kind = kind
	return adopt(p.external, p)
}

// One is one for a kind outside this package: adopt is given the
// address the servers file names (a DSN) and the server someone else runs
// as a Faultable (its kind, name, control and credentials set).
func One[T any](c *Cluster, kind, name, missing string, adopt func(addr string, s Faultable) (T, error), start func() (T, error)) (T, error) {
	return one(c, kind, name, missing, func(addr string, p program) (T, error) { return adopt(addr, Faultable{program: p}) }, start)
}

// Ports hands out one attempt's ports from pv, refusing one the kernel
// gave twice (each member has ports of its own).
func Ports(pv Provider, kind string) func(usual int) (int, error) {
	used := map[int]bool{}
	return func(usual int) (int, error) {
		p, err := pv.Port(usual)
		if err == nil && used[p] && p != usual {
			err = fmt.Errorf("%s: the kernel gave port %d twice", kind, p)
		}
		used[p] = true
		return p, err
	}
}

// StartMembers starts every member's unit, then waits until each is
// ready: a member of an ensemble serves only once a quorum is up, so all
// start first and are checked after.
func StartMembers(ctx context.Context, members []*Faultable) error {
	for _, m := range members {
		if err := m.p.Start(ctx); err != nil {
			return err
		}
	}
	for _, m := range members {
		if err := WaitUnit(ctx, m.name, m.p, m.ready); err != nil {
			return err
		}
	}
	return nil
}

// keptEnsemble is the run's one ensemble of kind, kept in *slot: the one
// running (running members: asking for another count is an error), or
// one of the size ensembleSize says, handed out by ensemble (adopt) or
// started (start, given the size) and kept. The caller holds the slot's
// lock.
func keptEnsemble[T any](c *Cluster, slot *T, running int, kind, what string, asked, max int, adopt func(ps []program) (T, []Server), start func(n int) (T, error)) (T, error) {
	var none T
	n, err := c.ensembleSize(kind, running, asked, max)
	switch {
	case err != nil:
		return none, err
	case running > 0:
		return *slot, nil
	}
	v, err := ensemble(c, kind, what, adopt, func() (T, error) { return start(n) })
	if err != nil {
		return none, err
	}
	*slot = v
	return v, nil
}

// KeptEnsemble is keptEnsemble for a kind outside this package: slot is
// the ensemble kept so far (nil before one), adopt is given the members a
// servers file names as Faultables of kind.
func KeptEnsemble[T any](c *Cluster, slot T, running int, kind, what string, asked, max int, adopt func(ms []Faultable) (T, []Server), start func(n int) (T, error)) (T, error) {
	return keptEnsemble(c, &slot, running, kind, what, asked, max, func(ps []program) (T, []Server) {
		ms := make([]Faultable, len(ps))
		for i, p := range ps {
			p.kind = kind
			ms[i] = Faultable{program: p}
		}
		return adopt(ms)
	}, start)
}

// ensembleSize is how many members a start-once ensemble of kind is to
// have: when one runs already (running members), that one's — asking for
// another count is an error —; on an external cluster, whatever was
// named; otherwise asked, 1 for 0, within 1..max. A closed cluster starts
// nothing.
func (c *Cluster) ensembleSize(kind string, running, asked, max int) (int, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return 0, ErrClosed
	case running > 0:
		if asked != 0 && asked != running {
			return 0, fmt.Errorf("cluster: %s already runs with %d members, not %d", kind, running, asked)
		}
		return running, nil
	case c.external != nil:
		return asked, nil
	case asked == 0:
		return 1, nil
	case asked < 1 || asked > max:
		return 0, fmt.Errorf("cluster: %s members must be 1 to %d, not %d", kind, max, asked)
	}
	return asked, nil
}
