package backends

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
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
	// the harness knows nothing of its lock but what the user claims.
	User bool
	// Claim is what a program of the user's claims of its lock
	// (--exec-claim: safe, stale-holder-possible, like:BACKEND), its cells
	// judged against it; empty: no claim, its verdicts reported, never
	// judged.
	Claim string
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

// UserRow is a program of the user's as a row of a comparison (compare
// --exec NAME='COMMAND ARGS', --exec-servers, --exec-claim;
// locktest.Compare).
type UserRow struct {
	// Name is the row's name; Command the program and its arguments.
	Name    string
	Command []string
	// Servers are the servers it gets, one entry per server
	// ("redis", "redis", "redis", "redis", "redis" for a Redlock over five;
	// ParseServers reads "redis*5"); empty: UserProgramKinds.
	Servers []string
	// Claim is its claim (Program.Claim), empty for none.
	Claim string
	// Renews plans the renew families for it (compare --exec rows: a
	// program that then announces no extend ability is not run there,
	// with the reason); unset, they are not planned (locktest.Compare's
	// rows, whose Go lock renews nothing the harness sees).
	Renews bool
}

// RegisterUserProgram registers a program of the user's as a row named
// name over the given kinds of server, one of each (UserProgramKinds when
// none), with no claim: RegisterUserRow with those.
func RegisterUserProgram(name string, command []string, kinds ...string) (remove func(), err error) {
	return RegisterUserRow(UserRow{Name: name, Command: command, Servers: kinds})
}

// RegisterUserRow registers a program of the user's as a row: its clients
// run its command, one process each; its servers are r.Servers (one
// redis-server when none, as backend exec's default); it is taken as a
// lease lock, able to run over Sentinel when it runs over one Redis, as
// backend exec is, and a renewing one when r.Renews says so; it names no
// library (the harness cannot know one). It
// fails when the name is taken. The returned function removes the row
// again, for a row lives as long as the command that named it.
func RegisterUserRow(r UserRow) (remove func(), err error) {
	name, command := r.Name, r.Command
	if _, _, err := Lookup(name); err == nil {
		return nil, fmt.Errorf("backends: %q is already a backend", name)
	}
	if len(command) == 0 {
		return nil, fmt.Errorf("backends: %s: no command", name)
	}
	servers := r.Servers
	if len(servers) == 0 {
		servers = UserProgramKinds
	}
	var kinds []string
	counts := map[string]int{}
	for _, k := range servers {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
		counts[k]++
	}
	var said []string
	for _, k := range kinds {
		said = append(said, fmt.Sprintf("%d %s", counts[k], k))
		if counts[k] == 1 {
			delete(counts, k)
		}
	}
	if len(counts) == 0 {
		counts = nil
	}
	info := Info{
		Name:        name,
		Description: "a program of the user's, speaking the client protocol: " + shell.Join(command),
		Servers:     strings.Join(said, ", "),
		Kinds:       kinds,
		Counts:      counts,
		Lease:       true,
		// Over Sentinel only as one Redis (a Redlock's five are five).
		Sentinel: slices.Contains(kinds, "redis") && counts["redis"] == 0,
		Renews:   r.Renews,
	}
	programsMu.Lock()
	programs[name] = Program{Command: slices.Clone(command), User: true, Claim: r.Claim}
	programsMu.Unlock()
	Register(info, func(ctx context.Context, env Env) (Backend, error) {
		for _, k := range info.Kinds {
			for range max(info.Counts[k], 1) {
				if err := env.Cluster.StartKind(ctx, k, env.Servers); err != nil {
					return nil, fmt.Errorf("backends: %s: %w", info.Name, err)
				}
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

// ParseServers reads a program's servers as --exec-servers gives them:
// kinds separated by commas, each with an optional count, "redis*5,postgres"
// — one entry per server. known lists the kinds there are.
func ParseServers(s string, known []string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		kind, count, hasCount := strings.Cut(part, "*")
		n := 1
		if hasCount {
			v, err := strconv.Atoi(strings.TrimSpace(count))
			if err != nil || v < 1 || v > 9 {
				return nil, fmt.Errorf("%q: want KIND or KIND*N with N from 1 to 9", part)
			}
			n = v
		}
		kind = strings.TrimSpace(kind)
		if !slices.Contains(known, kind) {
			return nil, fmt.Errorf("%q: unknown kind of server (known: %s)", kind, strings.Join(known, ", "))
		}
		for range n {
			out = append(out, kind)
		}
	}
	return out, nil
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

// ServerList lists the backend's servers one entry per server, as
// --exec-servers and exec.servers give them ("redis", "redis", ... for
// five).
func (i Info) ServerList() []string {
	var out []string
	for _, k := range i.Kinds {
		for range max(i.Counts[k], 1) {
			out = append(out, k)
		}
	}
	return out
}
