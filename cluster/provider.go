package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locktorture/locktorture/cluster/local"
)

// Where servers come from (Options.Servers).
const (
	// ServersLocal runs servers as local processes on 127.0.0.1 (the default).
	ServersLocal = "local"
	// ServersDocker runs each server in a container of its own, on a
	// network of the run's own (the cluster/docker package provides it).
	ServersDocker = "docker"
)

// imageAll is the Images key that names one image for every kind.
const imageAll = "all"

// ErrNoProvider is wrapped when a mode of Options.Servers is not built in.
var ErrNoProvider = errors.New("server mode not available")

// Provider is where a cluster's servers run: local processes (the default)
// or containers. The servers' types (Redis, Postgres, EtcdMember...) ask it
// for an address and a program to run, and drive that program through
// Unit; nemeses and backends never ask which provider runs.
type Provider interface {
	// Mode names the provider: "local", "docker".
	Mode() string
	// Host is the address (an IP) the named server will listen on,
	// reachable from the harness and from the other servers; the same for
	// the same name.
	Host(ctx context.Context, name string) (string, error)
	// Port is the port a server of this kind listens on: a free port
	// (local), or the kind's usual one (a container has its own address).
	Port(usual int) (int, error)
	// Dir is an empty directory for the named server's files, where it
	// runs (emptied if an earlier start of that name left files: each
	// start begins afresh).
	Dir(name string) (string, error)
	// HarnessHost is the address servers reach the harness at (where the
	// links that servers dial listen: a replica's link to its primary).
	HarnessHost() string
	// Program names the program to run for a server: a path found on the
	// harness's machine (local) or the name the image has on its PATH.
	Program(name, pkg string, extra ...string) (string, error)
	// Launch prepares a server's program; Unit.Start starts it.
	Launch(ctx context.Context, spec Spec) (Unit, error)
	// Images names the image each kind of server ran from (empty: local).
	Images() map[string]string
	// Close removes whatever the provider made besides the units (a
	// network). Units are stopped before.
	Close(ctx context.Context) error
}

// File is a file a server needs before it starts (a Sentinel's
// configuration), written where the server runs.
type File struct {
	// Path is where the server finds it.
	Path string
	// Content is what it holds.
	Content []byte
	// Mode is its permission bits.
	Mode os.FileMode
}

// Spec is one server's program and how to run it.
type Spec struct {
	// Name is the server's name ("redis-0").
	Name string
	// Kind picks the image: redis, postgres, etcd, zookeeper.
	Kind string
	// Program and Args are the command line (Program from Provider.Program).
	Program string
	Args    []string
	// Shell, when set, runs this sh -c script instead, with Program and
	// Args as its positional parameters ($1 is Program): a container's
	// first-start setup, or a choice of flags by the program's version.
	Shell string
	// Dir is the working directory (local).
	Dir string
	// Files are written before the program starts.
	Files []File
	// User runs the program as this system user where the harness is root
	// (PostgreSQL refuses root). Empty: the provider's default.
	User string
	// Cred is User's credential on this machine (local).
	Cred *syscall.Credential
	// StopSignal is the polite stop signal; zero means SIGTERM.
	StopSignal syscall.Signal
	// Tree makes signals reach the program's descendants too (local:
	// postgres forks backends into sessions of their own).
	Tree bool
	// LogPath receives the program's output.
	LogPath string
}

// Unit is one server's program, started, paused, killed and started again
// by a Provider.
type Unit interface {
	// Start starts the program (again, after Kill: same address, same files).
	Start(ctx context.Context) error
	// Pause freezes it (SIGSTOP; docker pause); Resume thaws it.
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	// Kill ends it at once, as a crash would, and returns once it is gone.
	Kill(ctx context.Context) error
	// Stop ends it for good, politely first, and releases what it holds.
	Stop(ctx context.Context) error
	// Running reports whether it is up.
	Running() bool
	// Exited is closed once the current start has ended.
	Exited() <-chan struct{}
	// LogPath is its log file.
	LogPath() string
	// OnDeath sets what hears of an exit that neither Kill nor Stop caused.
	OnDeath(f func(name, logPath string))
}

// ProviderOptions are what a provider factory gets.
type ProviderOptions struct {
	// Images maps a kind (or "all") to an image reference.
	Images map[string]string
	// LogDir is where server logs go.
	LogDir string
	// TempDir is the cluster's temporary directory.
	TempDir string
}

// ProviderFactory makes a provider for one cluster.
type ProviderFactory func(ctx context.Context, opt ProviderOptions) (Provider, error)

var (
	providersMu sync.Mutex
	providers   = map[string]ProviderFactory{}
)

// RegisterProvider makes mode available to Options.Servers. The docker
// provider registers itself when the cluster/docker package is imported,
// so that this package does not depend on a container library.
func RegisterProvider(mode string, f ProviderFactory) {
	providersMu.Lock()
	defer providersMu.Unlock()
	providers[mode] = f
}

var (
	sweepersMu sync.Mutex
	sweepers   []func(ctx context.Context) []string
)

// RegisterSweeper adds f to what SweepLeftovers runs: a mode's own sweep of
// what killed harnesses left (the docker provider's: containers and
// networks), so that any run, whatever its mode, removes it.
func RegisterSweeper(f func(ctx context.Context) []string) {
	sweepersMu.Lock()
	defer sweepersMu.Unlock()
	sweepers = append(sweepers, f)
}

// SweepLeftovers removes what harnesses that died without cleaning up left
// on this machine, in every mode this program knows: temporary directories
// (and the processes working in them) under tempDir (empty: the system's),
// and what each registered sweeper finds. It returns what it removed, in
// words. Best effort.
func SweepLeftovers(ctx context.Context, tempDir string) []string {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	local.Reap(tempDir, "")
	sweepersMu.Lock()
	fs := slices.Clone(sweepers)
	sweepersMu.Unlock()
	var out []string
	for _, f := range fs {
		out = append(out, f(ctx)...)
	}
	return out
}

func newProvider(ctx context.Context, mode string, opt ProviderOptions) (Provider, error) {
	if mode == "" || mode == ServersLocal {
		return localProvider{tmp: opt.TempDir}, nil
	}
	providersMu.Lock()
	f := providers[mode]
	providersMu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("%w: servers: %s is not built into this program", ErrNoProvider, mode)
	}
	return f(ctx, opt)
}

// ResolveImage is the image for kind: images[kind], else images["all"],
// else def.
func ResolveImage(images map[string]string, kind, def string) string {
	if ref := images[kind]; ref != "" {
		return ref
	}
	if ref := images[imageAll]; ref != "" {
		return ref
	}
	return def
}

// CheckImages refuses a kind that is not registered (Kinds) and not
// "all", and an empty reference or one that is not an image reference.
func CheckImages(images map[string]string) error {
	keys := make([]string, 0, len(images))
	for k := range images {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, known := LookupKind(k); !known && k != imageAll {
			return fmt.Errorf("image kind %q is not one of %s, %s", k, strings.Join(KindNames(), ", "), imageAll)
		}
		if strings.TrimSpace(images[k]) == "" {
			return fmt.Errorf("image for %s: empty reference", k)
		}
		if !imageRef.MatchString(images[k]) {
			return fmt.Errorf("image for %s: %q is not an image reference ([registry/]name[:tag][@digest], the name in lowercase: redis:7.4, locktorture-servers:bookworm)", k, images[k])
		}
	}
	return nil
}

// imageRef is the grammar of a Docker image reference (distribution's
// reference package): an optional registry host[:port]/, a lowercase path,
// an optional :tag and an optional @digest.
var imageRef = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
	`(?::\w[\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)

// localProvider runs servers as processes of this machine on 127.0.0.1.
type localProvider struct{ tmp string }

func (localProvider) Mode() string { return ServersLocal }

func (localProvider) Host(context.Context, string) (string, error) { return "127.0.0.1", nil }

// PortsRace: a free port of this machine can be taken before the server
// binds it.
func (localProvider) PortsRace() bool { return true }

func (localProvider) Port(int) (int, error) { return FreePort() }

func (l localProvider) Dir(name string) (string, error) {
	dir := filepath.Join(l.tmp, name)
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("cluster: %s: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cluster: %s: %w", name, err)
	}
	return dir, nil
}

func (localProvider) HarnessHost() string { return "127.0.0.1" }

func (localProvider) Program(name, pkg string, extra ...string) (string, error) {
	return lookBin(name, pkg, extra...)
}

// Launch writes the spec's files and prepares its program. A spec that
// names a User and no Cred runs as that user when the harness is root:
// its directory (Dir) and files become the user's, the directory closed
// to others, and the directories above it traversable.
func (l localProvider) Launch(_ context.Context, s Spec) (Unit, error) {
	as := runAs{cred: s.Cred}
	if s.Cred == nil && s.User != "" {
		var err error
		if as, err = systemRunAs(s.User, "the server does not run as root", s.User); err != nil {
			return nil, err
		}
		if err := as.reach(l.tmp, s.Dir); err != nil {
			return nil, err
		}
		if as.cred != nil {
			if err := os.Chmod(s.Dir, 0o700); err != nil {
				return nil, fmt.Errorf("cluster: %s: %w", s.Name, err)
			}
		}
	}
	for _, f := range s.Files {
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(f.Path, f.Content, mode); err != nil {
			return nil, fmt.Errorf("cluster: %s: %w", s.Name, err)
		}
		if s.Cred == nil {
			if err := as.chown(f.Path); err != nil {
				return nil, err
			}
		}
	}
	bin, args := s.Program, s.Args
	if s.Shell != "" {
		// As in a container: $0 is sh, the program is $1.
		bin, args = "/bin/sh", append([]string{"-c", s.Shell, "sh", s.Program}, s.Args...)
	}
	return local.New(local.Config{Name: s.Name, Bin: bin, Args: args, Dir: s.Dir, LogPath: s.LogPath,
		Cred: as.cred, StopSig: s.StopSignal, Tree: s.Tree}), nil
}

func (localProvider) Images() map[string]string { return nil }

func (localProvider) Close(context.Context) error { return nil }

// restartUnit starts a server's unit again — killing it first if it still
// runs — and waits until ready says it serves: every server type's Restart.
func restartUnit(ctx context.Context, name string, u Unit, ready func(context.Context) error) error {
	if u.Running() {
		if err := u.Kill(ctx); err != nil {
			return err
		}
	}
	if err := u.Start(ctx); err != nil {
		return err
	}
	if err := waitUnit(ctx, name, u, ready); err != nil {
		return fmt.Errorf("cluster: restart: %w", err)
	}
	return nil
}

// waitUnit polls ready until it succeeds, the unit exits, or ctx ends
// (15s at most).
func waitUnit(ctx context.Context, name string, u Unit, ready func(context.Context) error) error {
	return waitUnitFor(ctx, name, u, ready, 15*time.Second)
}

// waitUnitFor is waitUnit allowing limit for a unit that is not a local
// process (a container whose first start does more than start a server).
func waitUnitFor(ctx context.Context, name string, u Unit, ready func(context.Context) error, limit time.Duration) error {
	if p, ok := u.(*local.Proc); ok {
		return p.WaitReady(ctx, ready)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-u.Exited():
			return fmt.Errorf("%w: %s exited during start-up%s (its log: %s): %w", ErrStart, name, lastLogLine(u.LogPath()), u.LogPath(), last)
		case <-ctx.Done():
			return fmt.Errorf("%w: %s not ready (see %s): %w", ErrStart, name, u.LogPath(), last)
		case <-time.After(local.ReadyPoll):
		}
	}
}

// lastLogLine is ", saying: LINE" with the last line of a log, or "".
func lastLogLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return ""
	}
	if len(last) > 200 {
		last = last[:200] + "..."
	}
	return ", saying: " + last
}
