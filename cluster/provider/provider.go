// Package provider says what a provider of servers is — where a cluster's
// servers run — and keeps the registry of providers by mode. The providers
// are peers, each in a package of its own that registers itself:
// cluster/local (processes of this machine), cluster/docker (containers);
// servers someone else runs are handed out by the cluster itself
// (cluster.NewExternal). It depends on nothing of the harness, so a
// provider's package needs only this one.
package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
)

// The modes of Options.Servers a provider registers under.
const (
	// Local runs servers as local processes on 127.0.0.1 (the default).
	Local = "local"
	// Docker runs each server in a container of its own, on a network of
	// the run's own.
	Docker = "docker"
	// External names servers someone else runs (a servers file).
	External = "external"
)

// ErrNoProvider is wrapped when a mode is not built into this program.
var ErrNoProvider = errors.New("server mode not available")

// Provider is where a cluster's servers run: local processes (the default)
// or containers. The servers' types (redis.Redis, postgres.Postgres,
// etcd.Member...) ask it for an address and a program to run, and drive
// that program through Unit; nemeses and backends never ask which provider
// runs. What a provider can do beyond this (a local one's free ports can
// be taken by others; its servers' files are on the harness's machine) is
// said by small interfaces its users check, never by its Mode.
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

// Options are what a provider factory gets.
type Options struct {
	// Images maps a kind (or "all") to an image reference.
	Images map[string]string
	// LogDir is where server logs go.
	LogDir string
	// TempDir is the cluster's temporary directory.
	TempDir string
}

// Factory makes a provider for one cluster.
type Factory func(ctx context.Context, opt Options) (Provider, error)

var (
	mu        sync.Mutex
	factories = map[string]Factory{}
)

// Register makes mode available to a cluster's Options.Servers; a
// provider's package calls it from init, so that a program has the modes
// whose packages it links in (the cluster package links in local).
func Register(mode string, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	factories[mode] = f
}

// New makes the provider of mode ("" is Local) for one cluster.
func New(ctx context.Context, mode string, opt Options) (Provider, error) {
	if mode == "" {
		mode = Local
	}
	mu.Lock()
	f := factories[mode]
	mu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("%w: servers: %s is not built into this program", ErrNoProvider, mode)
	}
	return f(ctx, opt)
}
