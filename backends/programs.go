package backends

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/locktorture/locktorture/internal/shell"
)

// Program rows: backends whose clients are an adapter shipped under
// clients/ (a library in another language, driven through its public API
// by a program speaking the client protocol), one process per client. They
// are rows like any other — `run --backend kazoo`, `compare --backends
// kazoo` — with the library's name and version (Info.Library), and the
// servers their Kinds name, started as the exec backend starts them.

// Program is how a program row's clients run.
type Program struct {
	// Command is the adapter and its arguments; a path under clients/ is
	// the shipped adapter (clients.Resolve finds it from anywhere).
	Command []string
	// TLS is set when the library can log in only over TLS (python-etcd3
	// sends its token as a gRPC call credential): the row's runs start
	// their own servers with TLS (security: tls) unless told otherwise.
	TLS bool
	// User is set for a program of the user's (compare --exec NAME=...):
	// the harness knows nothing of its lock, so it states no claim.
	User bool
	// Prepare, when set, readies the adapter before a run's clients start
	// (curator compiles its Java source, once, into a cache): it runs when
	// the row's servers are started, with no open request's 10 s waiting
	// on it. An error stops the run, in one line.
	Prepare func(ctx context.Context) error
}

var (
	programsMu sync.Mutex
	programs   = map[string]Program{}
)

// registerProgram registers a program row: its clients are Program's
// processes, its servers info.Kinds.
func registerProgram(info Info, p Program) {
	if info.Library == nil || len(p.Command) == 0 {
		panic("backends: program row " + info.Name + " needs its library and its command")
	}
	programsMu.Lock()
	programs[info.Name] = p
	programsMu.Unlock()
	Register(info, func(ctx context.Context, env Env) (Backend, error) {
		if p.Prepare != nil {
			if err := p.Prepare(ctx); err != nil {
				return nil, fmt.Errorf("backends: %s: %w", info.Name, err)
			}
		}
		for _, k := range info.Kinds {
			if err := env.Cluster.StartKind(ctx, k, env.Servers); err != nil {
				return nil, fmt.Errorf("backends: %s: %w", info.Name, err)
			}
		}
		return programBackend{name: info.Name}, nil
	})
}

// ProgramOf returns how the clients of the backend named name run, when
// it is a program row.
func ProgramOf(name string) (Program, bool) {
	programsMu.Lock()
	p, ok := programs[name]
	programsMu.Unlock()
	if ok {
		p.Command = slices.Clone(p.Command)
	}
	return p, ok
}

// ProgramNames lists the program rows, sorted.
func ProgramNames() []string {
	programsMu.Lock()
	defer programsMu.Unlock()
	return slices.Sorted(maps.Keys(programs))
}

// IsUserProgram reports whether the backend named name is a program of
// the user's (RegisterUserProgram), whose lock makes no claim known here.
func IsUserProgram(name string) bool {
	p, ok := ProgramOf(name)
	return ok && p.User
}

// UserProgramKinds are the servers a program of the user's gets: one
// redis-server, as backend exec's default.
var UserProgramKinds = []string{"redis"}

// RegisterUserProgram registers a program of the user's as a row named
// name (compare --exec NAME='COMMAND ARGS', locktest.Compare): its clients
// are command's processes, speaking the client protocol; its servers one
// of each of kinds, or with none given one redis-server
// (UserProgramKinds, as backend exec's default); it is taken as a lease
// lock, able to run over Sentinel when it runs over Redis, as backend exec
// is; it names no library (the harness cannot know one). It fails when
// name is taken. The returned function removes the row again, for a row
// lives as long as the command that named it.
func RegisterUserProgram(name string, command []string, kinds ...string) (remove func(), err error) {
	if _, _, err := Lookup(name); err == nil {
		return nil, fmt.Errorf("backends: %q is already a backend", name)
	}
	if len(command) == 0 {
		return nil, fmt.Errorf("backends: %s: no command", name)
	}
	servers := strings.Join(kinds, ", ")
	if len(kinds) == 0 {
		kinds, servers = UserProgramKinds, "1 redis-server"
	}
	info := Info{
		Name:        name,
		Description: "a program of the user's, speaking the client protocol: " + shell.Join(command),
		Servers:     servers,
		Kinds:       slices.Clone(kinds),
		Lease:       true,
		Sentinel:    slices.Contains(kinds, "redis"),
	}
	programsMu.Lock()
	programs[name] = Program{Command: slices.Clone(command), User: true}
	programsMu.Unlock()
	Register(info, func(ctx context.Context, env Env) (Backend, error) {
		for _, k := range info.Kinds {
			if err := env.Cluster.StartKind(ctx, k, env.Servers); err != nil {
				return nil, fmt.Errorf("backends: %s: %w", info.Name, err)
			}
		}
		return programBackend{name: info.Name}, nil
	})
	return func() {
		registered.Remove(name)
		programsMu.Lock()
		delete(programs, name)
		programsMu.Unlock()
	}, nil
}

// Package is a Debian package a backend's clients need (a program row's
// library and interpreter): `locktorture list packages` lists them, and
// make deps installs them.
type Package struct {
	Name    string
	Backend string
}

// ClientPackages lists the Debian packages the program rows' clients need,
// one entry per backend and package, in backend order.
func ClientPackages() []Package {
	var out []Package
	for _, name := range ProgramNames() {
		info, _, _ := Lookup(name)
		if info.Library != nil && info.Library.Debian != "" {
			out = append(out, Package{Name: info.Library.Debian, Backend: name})
		}
		for _, p := range clientPackages[name] {
			out = append(out, Package{Name: p, Backend: name})
		}
	}
	return out
}

// clientPackages are packages a program row needs besides its library's
// (a database driver its library loads).
var clientPackages = map[string][]string{}

type programBackend struct{ name string }

func (b programBackend) Client(ctx context.Context, c ClientEnv) (Client, error) {
	return nil, fmt.Errorf("%s: %w", b.name, errExecClient)
}

func (programBackend) Close() error { return nil }
