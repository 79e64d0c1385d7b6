// Package local is the local provider: it runs a cluster's servers as
// processes of this machine on 127.0.0.1 (Provider, registered as
// "local"): a process that is paused, killed and started again (Proc),
// with the process trees of servers that fork (postgres); the system user
// a server runs as when the harness is root (RunAs) and the files a kind
// keeps between runs (Template: PostgreSQL's initdb template). It depends
// only on cluster/provider and internal/owner (which process owns what a
// run leaves, and the reaper of what a killed harness left behind).
package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/locktorture/locktorture/internal/owner"
)

// ErrStart is wrapped when a server does not come up (cluster.ErrStart).
var ErrStart = errors.New("server did not start")

// procConfig is how a Proc runs its program.
type procConfig struct {
	// Name names the server in errors.
	Name string
	// Bin and Args are the command line; Dir its working directory.
	Bin  string
	Args []string
	Dir  string
	// LogPath receives the program's output (appended to).
	LogPath string
	// Cred, when set, runs the process as another user (PostgreSQL
	// refuses to run as root).
	Cred *syscall.Credential
	// StopSig is the polite stop signal; zero means SIGTERM.
	StopSig syscall.Signal
	// Tree makes signals, kill and stop reach every descendant too, and
	// kill and stop wait until none is left: for servers that fork
	// children into sessions of their own (postgres).
	Tree bool
}

// newProc is a process of c, not started.
func newProc(c procConfig) *Proc {
	return &Proc{name: c.Name, bin: c.Bin, args: c.Args, dir: c.Dir, logPath: c.LogPath,
		cred: c.Cred, stopSig: c.StopSig, tree: c.Tree}
}

// Proc is one server process that can be paused, killed and started again
// with the same arguments.
type Proc struct {
	name    string
	bin     string
	args    []string
	dir     string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
	log    *os.File

	// cred, when set, runs the process as another user (PostgreSQL
	// refuses to run as root).
	cred *syscall.Credential
	// stopSig is the polite stop signal; zero means SIGTERM.
	stopSig syscall.Signal
	// tree makes signals, kill and stop reach every descendant too, and
	// kill and stop wait until none is left: for servers that fork
	// children into sessions of their own (postgres).
	tree bool
	// ending is set while the harness itself kills or stops the process:
	// an exit then is expected. onDeath, when set, hears of any other exit
	// (a server that crashed, or that someone shut down from outside).
	ending  bool
	onDeath func(name, logPath string)
}

func (p *Proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.name)
	}
	if p.log == nil {
		f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("%s: log: %w", p.name, err)
		}
		p.log = f
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Dir = p.dir
	cmd.Stdout = p.log
	cmd.Stderr = p.log
	// Own process group (a terminal's Ctrl-C reaches only the harness, which
	// stops servers in order) and killed with the harness if it dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: p.cred}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStart, p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		unexpected, onDeath := !p.ending, p.onDeath
		p.mu.Unlock()
		if unexpected && onDeath != nil {
			onDeath(p.name, p.logPath)
		}
		close(exited)
	}()
	p.cmd, p.exited, p.paused, p.ending = cmd, exited, false, false
	return nil
}

// running reports whether the process is up (not exited).
func (p *Proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *Proc) exitedCh() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return p.exited
}

func (p *Proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return fmt.Errorf("%s: not running", p.name)
	}
	pid := p.cmd.Process.Pid
	frozen := []owner.Ref{{PID: pid}}
	if p.tree {
		if err := signalTree(pid, sig); err != nil {
			return fmt.Errorf("%s: %v: %w", p.name, sig, err)
		}
		frozen = append(descendants(pid), frozen...)
	} else if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s: %v: %w", p.name, sig, err)
	}
	if sig == syscall.SIGSTOP {
		// Signals arrive asynchronously (a busy JVM takes a while to stop
		// all its threads): return once every process is frozen, so a
		// pause is in force when the caller records it.
		waitStopped(frozen, 2*time.Second)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT:
		p.paused = false
	}
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) kill() error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.ending = true
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if p.tree {
		killTree(cmd.Process.Pid, exited)
	} else {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
	p.mu.Lock()
	p.cmd, p.paused = nil, false
	p.mu.Unlock()
	return nil
}

// stop ends the process politely (SIGCONT, SIGTERM), then by force after a
// grace period, and closes its log.
func (p *Proc) stop() error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.ending = true
	p.mu.Unlock()
	var err error
	if cmd != nil {
		sig := p.stopSig
		if sig == 0 {
			sig = syscall.SIGTERM
		}
		var kids []owner.Ref
		if p.tree {
			// Children found now are waited for below: none may outlive
			// the server.
			kids = descendants(cmd.Process.Pid)
			_ = signalTree(cmd.Process.Pid, syscall.SIGCONT)
		} else {
			_ = cmd.Process.Signal(syscall.SIGCONT)
		}
		_ = cmd.Process.Signal(sig)
		select {
		case <-exited:
		case <-time.After(3 * time.Second):
			if !p.tree {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-exited
			}
		}
		if p.tree {
			killTree(cmd.Process.Pid, exited, kids...)
		}
		p.mu.Lock()
		p.cmd, p.paused = nil, false
		p.mu.Unlock()
	}
	p.mu.Lock()
	if p.log != nil {
		if cerr := p.log.Close(); cerr != nil && !errors.Is(cerr, os.ErrClosed) {
			err = cerr
		}
		p.log = nil
	}
	p.mu.Unlock()
	return err
}

// Start starts the process (Unit).
func (p *Proc) Start(context.Context) error { return p.start() }

// Pause freezes the process (and, for a tree, its descendants) with SIGSTOP.
func (p *Proc) Pause(context.Context) error { return p.signal(syscall.SIGSTOP) }

// Resume thaws it with SIGCONT.
func (p *Proc) Resume(context.Context) error { return p.signal(syscall.SIGCONT) }

// Kill ends it with SIGKILL and waits until it is gone.
func (p *Proc) Kill(context.Context) error { return p.kill() }

// Stop ends it for good.
func (p *Proc) Stop(context.Context) error { return p.stop() }

// Running reports whether it is up.
func (p *Proc) Running() bool { return p.running() }

// Exited is closed when the current start has ended.
func (p *Proc) Exited() <-chan struct{} { return p.exitedCh() }

// LogPath is its log file.
func (p *Proc) LogPath() string { return p.logPath }

// OnDeath sets what hears of an exit nobody asked for.
func (p *Proc) OnDeath(f func(name, logPath string)) {
	p.mu.Lock()
	p.onDeath = f
	p.mu.Unlock()
}

// PID is the process id, or 0 when it is not running.
func (p *Proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// ReadyPoll is how often a starting server is asked whether it is ready:
// often, since a run waits for its servers (a redis-server answers within
// about 10ms of its start).
const ReadyPoll = 5 * time.Millisecond

// ReadyLimit bounds how long a server that is running may take to be
// ready. Only a broken server pays it (one that exits is seen at once):
// on a loaded 2-core machine (load ~45) a ZooKeeper ensemble took over
// 15 s, and the run was a harness error.
const ReadyLimit = 60 * time.Second

// WaitReady polls ready until it succeeds, the process exits, or ctx ends
// (ReadyLimit at most).
func (p *Proc) WaitReady(ctx context.Context, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyLimit)
	defer cancel()
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-p.exitedCh():
			return fmt.Errorf("%w: %s exited during start-up (see %s): %w", ErrStart, p.name, p.logPath, last)
		case <-ctx.Done():
			return fmt.Errorf("%w: %s not ready (see %s): %w", ErrStart, p.name, p.logPath, last)
		case <-time.After(ReadyPoll):
		}
	}
}

// descendants lists the processes below pid (children, their children...),
// read from /proc.
func descendants(pid int) []owner.Ref {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	kids := map[int][]owner.Ref{}
	for _, e := range ents {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := owner.Stat(id); ok {
			kids[st.PPID] = append(kids[st.PPID], owner.Ref{PID: id, Start: st.Start})
		}
	}
	var out []owner.Ref
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, k := range kids[p] {
			out = append(out, k)
			queue = append(queue, k.PID)
		}
	}
	return out
}

// waitStopped waits until every process is stopped (or gone), or d has
// passed. A ref without a start time matches any process with its pid.
func waitStopped(ps []owner.Ref, d time.Duration) {
	deadline := time.Now().Add(d)
	for _, p := range ps {
		for time.Now().Before(deadline) {
			st, ok := owner.Stat(p.PID)
			if !ok || st.State == 'T' || st.State == 't' || st.State == 'Z' || st.State == 'X' || (p.Start != "" && st.Start != p.Start) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// signalTree sends sig to pid and every descendant. A SIGSTOP reaches the
// parent first, so it forks no new child meanwhile.
func signalTree(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(pid, sig); err != nil {
		return err
	}
	for _, k := range descendants(pid) {
		_ = syscall.Kill(k.PID, sig)
	}
	return nil
}

// killTree kills pid and its descendants (plus extra, processes found
// earlier that may have been orphaned since) with SIGKILL, and waits until
// all are gone. The parent is stopped first so it forks nothing new.
func killTree(pid int, exited <-chan struct{}, extra ...owner.Ref) {
	all := extra
	select {
	case <-exited:
	default:
		_ = syscall.Kill(pid, syscall.SIGSTOP)
		all = append(all, descendants(pid)...)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, k := range all {
		if !k.Gone() {
			_ = syscall.Kill(k.PID, syscall.SIGKILL)
		}
	}
	<-exited
	owner.WaitGone(all, 10*time.Second)
}

// Child is a process below a server's (a postgres backend), named so that
// a reused pid is not taken for it.
type Child struct{ ref owner.Ref }

// PID is its process id.
func (c Child) PID() int { return c.ref.PID }

// Gone reports whether it has ended.
func (c Child) Gone() bool { return c.ref.Gone() }

// Children lists the processes below pid (children, their children...).
func Children(pid int) []Child {
	var out []Child
	for _, r := range descendants(pid) {
		out = append(out, Child{r})
	}
	return out
}

// State is a process's state letter as /proc says it ('T' stopped, 'Z' a
// zombie...), and whether it could be read.
func State(pid int) (byte, bool) {
	st, ok := owner.Stat(pid)
	return st.State, ok
}
