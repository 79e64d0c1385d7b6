package clientprotocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/owner"
)

// ErrCommand is wrapped when a child's program cannot be found: a bad
// scenario, not a harness failure.
var ErrCommand = errors.New("client program not found")

// ConfigEnv is the environment variable that carries a built-in backend's
// settings (a ChildConfig, as JSON) to `locktorture client`.
const ConfigEnv = "LOCKTORTURE_CLIENT"

// defaultOpenTimeout bounds how long a run waits for a child to answer
// open: long enough for a JVM or a Python interpreter to start on a
// loaded machine (a CI machine at load 40 took over 10 s), short only
// for a program that never answers. client-check holds a program to the
// protocol's own rule (openRule).
const defaultOpenTimeout = 30 * time.Second

// openRule is how soon the protocol asks a program to answer open
// (docs/client-protocol.md: "open is answered ok within 10 s"); only
// client-check holds a program to it.
const openRule = 10 * time.Second

// Options say how to start and open the children of a run.
type Options struct {
	// Command is the program and its arguments; Env adds to the
	// harness's environment.
	Command []string
	Env     map[string]string
	// Builtin, when set, is the built-in backend `locktorture client`
	// runs: it reaches the child in ConfigEnv, with each client's address
	// aliases added.
	Builtin *ChildConfig
	// Cluster holds the servers; each child gets the addresses of its
	// own links to them (ClientAddr).
	Cluster *cluster.Cluster
	// Dir receives client-N.log, each child's stderr.
	Dir string
	// TTL and Timeout are the open request's ttl_ms and timeout_ms.
	TTL, Timeout time.Duration
	// BackendOptions are the backend's options, sent as the open request's
	// "options" (an options struct is sent by its yaml keys).
	BackendOptions any
	// OpenTimeout bounds the open request (zero: 30s).
	OpenTimeout time.Duration
	// ReplyGrace is how long past a request's timeout a reply may come
	// before the child counts as wedged, a harness failure (zero: the
	// request timeout, at least 3s). Time the child spends paused by the
	// harness does not count. A child that answers neither close nor a
	// request that timed out before it is wedged too.
	ReplyGrace time.Duration
	// Logf, when set, is told what the run's log should say of the
	// clients besides warnings (an extend's outcome that came too late).
	Logf func(format string, args ...any)
	// logCap caps each client's log (zero: logCap).
	logCap int64
}

// Procs are the harness's view of the simulated processes: process p's
// pause gate, clock and history.
type Procs struct {
	Gates   []*clientfault.Gate
	Clocks  []*clientfault.Clock
	History []*history.Proc
}

// Launcher runs a run's clients as processes: it is the backend the client
// loop drives (Client returns process p's child) and the one place that
// starts, freezes and kills them.
type Launcher struct {
	opt      Options
	children []*child
	options  map[string]any

	// ctx ends the children's event handling when the launcher closes.
	ctx    context.Context
	cancel context.CancelFunc

	failOnce sync.Once
	failed   chan struct{}
	failErr  error

	// tag marks every child's environment (ownerEnv), "owner/N".
	tag      string
	warnMu   sync.Mutex
	warnings []string

	closeOnce sync.Once
	// authDir holds the TLS files children are given ("" until needed).
	authMu  sync.Mutex
	authDir string
}

// defaultReplyGrace is how long past a request's timeout a run waits for
// its reply before it stops the run: the timeout, at least 3s.
func defaultReplyGrace(timeout time.Duration) time.Duration {
	return max(timeout, 3*time.Second)
}

// New returns a launcher; Start starts the children.
func New(opt Options) *Launcher {
	if opt.OpenTimeout <= 0 {
		opt.OpenTimeout = defaultOpenTimeout
	}
	if opt.ReplyGrace <= 0 {
		opt.ReplyGrace = defaultReplyGrace(opt.Timeout)
	}
	if opt.logCap <= 0 {
		opt.logCap = logCap
	}
	ctx, cancel := context.WithCancel(context.Background())
	ownerID, err := owner.ID()
	if err != nil {
		ownerID = strconv.Itoa(os.Getpid())
	}
	tag := fmt.Sprintf("%s/%d", ownerID, launchers.Add(1))
	return &Launcher{opt: opt, ctx: ctx, cancel: cancel, failed: make(chan struct{}), tag: tag}
}

// warn adds a warning for the run.
func (l *Launcher) warn(format string, args ...any) {
	l.warnMu.Lock()
	defer l.warnMu.Unlock()
	l.warnings = append(l.warnings, fmt.Sprintf(format, args...))
}

// logf says a line in the run's log (Options.Logf).
func (l *Launcher) logf(format string, args ...any) {
	if l.opt.Logf != nil {
		l.opt.Logf(format, args...)
	}
}

// Warnings are what the run should be told besides its verdict: processes
// a client left behind (ended by the harness), logs that were cut.
func (l *Launcher) Warnings() []string {
	l.warnMu.Lock()
	defer l.warnMu.Unlock()
	out := slices.Clone(l.warnings)
	slices.Sort(out) // by client, as they name it first
	return out
}

// Start starts one child per process, in parallel, and opens each with the
// addresses of its own links; it returns when every child has answered
// (or the first error: a child that did not open, exit 255; a program
// that does not exist, ErrCommand). Close must be called in any case.
func (l *Launcher) Start(ctx context.Context, procs Procs) error {
	if len(l.opt.Command) == 0 {
		return fmt.Errorf("%w: no command", ErrCommand)
	}
	if _, err := exec.LookPath(l.opt.Command[0]); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCommand, l.opt.Command[0], err)
	}
	opts, err := jsonOptions(l.opt.BackendOptions)
	if err != nil {
		return err
	}
	l.options = opts
	n := len(procs.Gates)
	l.children = make([]*child, n)
	for p := range n {
		c, err := l.spawn(p, procs)
		if err != nil {
			return err
		}
		l.children[p] = c
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for p, c := range l.children {
		wg.Go(func() { errs[p] = c.open(ctx, l.opt.OpenTimeout) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// jsonOptions turns backend options into the JSON object the open request
// carries: a map as it is, a struct by its yaml keys.
func jsonOptions(o any) (map[string]any, error) {
	out := map[string]any{}
	if o == nil {
		return out, nil
	}
	b, err := yaml.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("clientprotocol: options: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("clientprotocol: options: %w", err)
	}
	for k, v := range m {
		out[k] = v
	}
	return out, nil
}

// logName is the name of process p's stderr log in the store.
func logName(p int) string { return fmt.Sprintf("client-%d.log", p) }

// spawn starts process p's child (not yet opened).
func (l *Launcher) spawn(p int, procs Procs) (*child, error) {
	logPath := filepath.Join(l.opt.Dir, logName(p))
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("clientprotocol: %w", err)
	}
	// stdout and stderr are pipes of our own, so that the harness decides
	// when to stop reading them: a process the child started may hold them
	// open long after the child is gone.
	outR, outW, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("clientprotocol: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		logf.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("clientprotocol: %w", err)
	}
	defer outW.Close() // the child holds its own copies
	defer errW.Close()
	closeReaders := func() { outR.Close(); errR.Close(); logf.Close() }
	tag := fmt.Sprintf("%s.%d", l.tag, p)
	cmd := exec.Command(l.opt.Command[0], l.opt.Command[1:]...)
	cmd.Env = append(os.Environ(), ownerEnv+"="+tag)
	cmd.Env = append(cmd.Env, sortedEnv(l.opt.Env)...)
	given := l.given(p)
	auth, err := l.authFiles(given.Auth)
	if err != nil {
		closeReaders()
		return nil, err
	}
	if l.opt.Builtin != nil {
		cfg := *l.opt.Builtin
		cfg.Aliases = given.Aliases
		b, err := json.Marshal(cfg)
		if err != nil {
			closeReaders()
			return nil, fmt.Errorf("clientprotocol: %w", err)
		}
		cmd.Env = append(cmd.Env, ConfigEnv+"="+string(b))
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	// A process group of its own, so a pause stops everything the client
	// started and a kill ends it all; and it dies with the harness.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// stdin too: a write to it can then have a deadline (a child that
	// stops reading it cannot block the harness).
	inR, stdin, err := os.Pipe()
	if err != nil {
		closeReaders()
		return nil, fmt.Errorf("clientprotocol: %w", err)
	}
	defer inR.Close()
	cmd.Stdin = inR
	c := &child{l: l, p: p, logPath: logPath, cmd: cmd, stdin: stdin, given: given, auth: auth, tag: tag,
		gate: procs.Gates[p], clock: procs.Clocks[p], hist: procs.History[p],
		abandoned: map[int64]bool{}, lost: map[string]chan struct{}{},
		events: make(chan Message, 1024), eventsDone: make(chan struct{}), fatalCh: make(chan struct{}), exited: make(chan struct{}),
		readDone: make(chan struct{}), logDone: make(chan struct{}), done: make(chan struct{}),
		stdout: outR, stderr: errR, log: newCapLog(logf, l.opt.logCap),
		nextID: -1}
	if err := cmd.Start(); err != nil {
		closeReaders()
		stdin.Close()
		return nil, fmt.Errorf("%s: start %s: %w", c.name(), l.opt.Command[0], err)
	}
	c.pgid = cmd.Process.Pid
	go c.read(outR)
	go c.copyLog()
	go c.handleEvents()
	go c.wait()
	return c, nil
}

// sortedEnv is env as KEY=value entries of a command's environment,
// sorted by key (what a child is given does not vary from run to run).
func sortedEnv(env map[string]string) []string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

// authFiles is the auth object a child is sent: a's, its TLS files copied
// (0600) into the launcher's private directory, made on first use and
// removed by Close.
func (l *Launcher) authFiles(a cluster.AuthSet) (cluster.AuthSet, error) {
	tlsUsed := false
	for _, list := range a {
		for _, x := range list {
			tlsUsed = tlsUsed || (x != nil && x.TLS != nil)
		}
	}
	if !tlsUsed {
		return a, nil
	}
	l.authMu.Lock()
	defer l.authMu.Unlock()
	if l.authDir == "" {
		parent := ""
		if l.opt.Cluster != nil {
			parent = l.opt.Cluster.TempDir()
		}
		dir, err := cluster.PrivateDir(parent)
		if err != nil {
			return nil, fmt.Errorf("clientprotocol: %w", err)
		}
		l.authDir = dir
	}
	out, err := a.WriteTLSFiles(l.authDir)
	if err != nil {
		return nil, fmt.Errorf("clientprotocol: %w", err)
	}
	return out, nil
}

// given is what process p dials: the address of its own link to every
// server (Aliases map each server's real address to it).
func (l *Launcher) given(p int) cluster.ServerSet {
	if l.opt.Cluster == nil {
		return cluster.ServerSet{Aliases: map[string]string{}}
	}
	return l.opt.Cluster.ClientServers(p)
}

// abilities returns what process p's child announced when it opened.
func (l *Launcher) abilities(p int) []string {
	if p < 0 || p >= len(l.children) || l.children[p] == nil {
		return nil
	}
	return l.children[p].abilities
}

// Has reports whether every child announced ability a.
func (l *Launcher) Has(a string) bool {
	for _, c := range l.children {
		if c == nil || !slices.Contains(c.abilities, a) {
			return false
		}
	}
	return len(l.children) > 0
}

// Client returns process ce.Process's child, opened by Start.
func (l *Launcher) Client(ctx context.Context, ce backends.ClientEnv) (backends.Client, error) {
	if ce.Process < 0 || ce.Process >= len(l.children) || l.children[ce.Process] == nil {
		return nil, fmt.Errorf("clientprotocol: no client process %d was started", ce.Process)
	}
	return l.children[ce.Process], nil
}

// Failed is closed when a child failed the harness (it broke the protocol
// or exited early); Err says how.
func (l *Launcher) Failed() <-chan struct{} { return l.failed }

// Err is the first child failure, or nil.
func (l *Launcher) Err() error {
	select {
	case <-l.failed:
		return l.failErr
	default:
		return nil
	}
}

func (l *Launcher) fail(err error) {
	l.failOnce.Do(func() {
		l.failErr = err
		close(l.failed)
	})
}

// Logs are the children's log files.
func (l *Launcher) Logs() []string {
	var out []string
	for _, c := range l.children {
		if c != nil {
			out = append(out, c.logPath)
		}
	}
	return out
}

// Close asks every child to close, then kills what is left of each
// (resumed first, so nothing stays stopped) and waits until all are gone —
// a bounded wait: a child's pipes are read for at most pipeGrace after it
// exits. Processes the children left behind are ended and named in
// Warnings.
func (l *Launcher) Close() error {
	l.closeOnce.Do(l.close)
	return nil
}

func (l *Launcher) close() {
	var wg sync.WaitGroup
	for _, c := range l.children {
		if c != nil {
			wg.Go(c.shutdown)
		}
	}
	wg.Wait()
	l.cancel()
	// Each child's last events are recorded before the history goes on
	// (a bounded wait: its output has ended, and nothing waits on ctx).
	for _, c := range l.children {
		if c != nil {
			<-c.eventsDone
		}
	}
	if l.authDir != "" {
		_ = os.RemoveAll(l.authDir)
	}
	prefix := l.tag + "."
	if left := procsTagged(func(tag string) bool { return strings.HasPrefix(tag, prefix) }); len(left) > 0 {
		killAll(left)
		for _, p := range left {
			l.warn("a client left %s running after it ended; the harness killed it", p)
		}
	}
}
