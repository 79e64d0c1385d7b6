package scenarios

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/workload"
)

// Client modes (client_mode, --client-mode).
const (
	// ClientInproc runs every client as goroutines of the harness (the
	// default); a pause stops them at their next step.
	ClientInproc = "inproc"
	// ClientProcess runs every client as a process of its own that speaks
	// the client protocol; a pause freezes the whole process (SIGSTOP).
	ClientProcess = "process"
)

// ExecBackend is the backend that runs a program of the user's.
const ExecBackend = "exec"

// Exec is the program the exec backend runs, one copy per client.
type Exec struct {
	// Command is the program and its arguments (required).
	Command []string `yaml:"command"`
	// Env adds to the harness's environment.
	Env map[string]string `yaml:"env,omitempty"`
	// Servers are the servers to start for it, one entry per server:
	// redis (the default: one), postgres, etcd.
	Servers []string `yaml:"servers,omitempty"`
}

// Program names the program exec runs, for the summary: the script an
// interpreter runs (my_lock.py in `python3 my_lock.py`, also after `env
// VAR=...`), the script a launcher is handed (redis-lock.js in `run.sh
// redis-lock.js`), or the program's own file name.
func (e *Exec) Program() string {
	if e == nil || len(e.Command) == 0 {
		return ""
	}
	cmd := e.Command
	// env VAR=value... COMMAND: the command is the program.
	for len(cmd) > 1 && filepath.Base(cmd[0]) == "env" {
		cmd = cmd[1:]
		for len(cmd) > 1 && (strings.Contains(cmd[0], "=") || strings.HasPrefix(cmd[0], "-")) {
			cmd = cmd[1:]
		}
	}
	name := filepath.Base(cmd[0])
	if interpreters[strings.TrimRight(name, "0123456789.")] {
		for i := 1; i < len(cmd); i++ {
			a := cmd[i]
			switch {
			case a == "-m" || a == "-jar": // python3 -m module, java -jar x.jar
				if i+1 < len(cmd) {
					return filepath.Base(cmd[i+1])
				}
			case !strings.HasPrefix(a, "-"):
				return filepath.Base(a)
			}
		}
	}
	// A launcher handed a script (clients/node/run.sh redis-lock.js): the
	// script is the program.
	if len(cmd) > 1 && scriptFiles[filepath.Ext(cmd[1])] {
		return filepath.Base(cmd[1])
	}
	return name
}

// scriptFiles are the extensions of a script a launcher may be handed.
var scriptFiles = map[string]bool{".js": true, ".mjs": true, ".cjs": true, ".ts": true, ".py": true, ".rb": true, ".pl": true, ".php": true, ".lua": true, ".java": true, ".jar": true}

// interpreters run a script named by their first argument.
var interpreters = map[string]bool{"python": true, "pypy": true, "node": true, "deno": true, "bun": true, "ruby": true,
	"perl": true, "php": true, "sh": true, "bash": true, "dash": true, "zsh": true, "java": true, "lua": true, "Rscript": true}

// ProcessClients reports whether the run's clients are processes: in
// process mode, and always for exec; with no client_mode given, also for
// a library that keeps its lock alive by itself (backends.Info.RenewsItself:
// only a stopped process freezes its timers, so a pause is faithful only
// there; client_mode inproc still runs it in-process).
func (s *Scenario) ProcessClients() bool {
	if s.ClientMode == ClientProcess || s.Backend == ExecBackend {
		return true
	}
	if _, ok := backends.ProgramOf(s.Backend); ok {
		return true // a program row: its clients are the shipped adapter
	}
	info, _, err := backends.Lookup(s.Backend)
	return s.ClientMode == "" && err == nil && info.RenewsItself
}

// ExecServers are the servers the exec backend starts (nil for another backend).
func (s *Scenario) ExecServers() []string {
	if s.Backend != ExecBackend || s.Exec == nil {
		return nil
	}
	if len(s.Exec.Servers) == 0 {
		return []string{cluster.DefaultKind}
	}
	return s.Exec.Servers
}

// serverKinds are the kinds of server the run's backend runs.
// ServerKinds are the kinds of server the run uses: the backend's, or for
// exec the ones exec.servers names (redis when it names none).
func (s *Scenario) ServerKinds() []string {
	info, _, _ := backends.Lookup(s.Backend)
	return s.serverKinds(info)
}

func (s *Scenario) serverKinds(info backends.Info) []string {
	var out []string
	if s.Backend != ExecBackend {
		out = slices.Clone(info.ServerKinds())
	} else {
		for _, k := range s.ExecServers() {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
		if out == nil {
			out = []string{}
		}
	}
	// A kind may join those by their settings (cluster.Joiner: postgres:
	// {via: pgbouncer} puts a PgBouncer in front of the run's PostgreSQL).
	for _, k := range cluster.Kinds() {
		if j, ok := k.Abilities.(cluster.Joiner); ok && !slices.Contains(out, k.Name) && j.Joins(out, s.Kinds) {
			out = append(out, k.Name)
		}
	}
	return out
}

// validateClients checks client_mode and exec.
func (s *Scenario) validateClients() error {
	bad := func(field, format string, a ...any) error {
		return &fieldError{field: field, msg: fmt.Sprintf(format, a...)}
	}
	switch s.ClientMode {
	case "", ClientInproc, ClientProcess:
	default:
		return bad("client_mode", "unknown client_mode %q (inproc, process)", s.ClientMode)
	}
	if _, ok := backends.ProgramOf(s.Backend); ok && s.ClientMode == ClientInproc {
		return bad("client_mode", "backend %s runs its library's adapter as processes: client_mode inproc does not apply", s.Backend)
	}
	if s.Backend == ExecBackend {
		if s.ClientMode == ClientInproc {
			return bad("client_mode", "backend exec runs its program as processes: client_mode inproc does not apply")
		}
		if s.Exec == nil || len(s.Exec.Command) == 0 || s.Exec.Command[0] == "" {
			return bad("exec", "backend exec needs the program to run: exec: {command: [program, args...]}")
		}
		for _, k := range s.Exec.Servers {
			if !slices.Contains(cluster.KindNames(), k) {
				return bad("exec", "exec.servers: unknown kind of server %q (known: %s)", k, strings.Join(cluster.KindNames(), ", "))
			}
		}
	}
	_, program := backends.ProgramOf(s.Backend)
	if (s.Backend == ExecBackend || program) && s.Suits != nil && slices.Contains(s.Suits.Needs, backends.AbilityInTx) {
		// pg-terminate-xact: its verdict rests on the resource's writes
		// rolling back with the lock's transaction, which is the program's.
		field := "backend"
		if s.Backend == ExecBackend {
			field = "exec"
		}
		var inTx []string
		for _, b := range backends.Names() {
			if info, _, err := backends.Lookup(b); err == nil && info.InTx {
				inTx = append(inTx, b)
			}
		}
		return bad(field, "scenario %s is about writes inside the lock's own transaction (suits: needs %s), which a program's run cannot honour: backend %s runs a program, and the harness writes the resource from its own process, outside the program's transaction, and would judge those writes; run it with a built-in backend that has %s (%s)", s.Name, backends.AbilityInTx, s.Backend, backends.AbilityInTx, strings.Join(inTx, ", "))
	}
	if info, _, _ := backends.Lookup(s.Backend); s.ProcessClients() && info.InTx && (s.Resource == workload.ResourcePostgres || s.Resource == "mysql") {
		return bad("client_mode", "backend %s with the %s resource writes inside the lock's own transaction, which cannot leave the client's process: run it with client_mode inproc", s.Backend, s.Resource)
	}
	return nil
}

// splitCommand splits a command line as a POSIX shell would split plain
// words and quoted ones ('...', "...", backslash escapes): --exec's value.
// SplitCommand splits a command line as --exec does: plain and quoted
// words, as a shell splits them, with no expansion.
func SplitCommand(line string) ([]string, error) { return splitCommand(line) }

func splitCommand(line string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	esc := false
	for _, r := range line {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\\':
			esc, inWord = true, true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || esc {
		return nil, fmt.Errorf("%w: unbalanced quote or trailing backslash in %q", ErrInvalid, line)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// programDefaults: a program row whose library logs in only over TLS
// (python-etcd3) runs the run's own servers with TLS (security: tls),
// unless the servers are someone else's (their file says how they talk).
func (s *Scenario) programDefaults() {
	if p, ok := backends.ProgramOf(s.Backend); ok && p.TLS && s.Servers != cluster.ServersExternal {
		s.Security = SecurityTLS
	}
}
