package backends

import (
	"context"
	"net"
	"os/exec"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/locktorture/locktorture/clientfault"
)

// Library names the third-party library a backend drives through its
// public API (Info.Library): results.json's library field, with the
// version the running program was built with.
type Library struct {
	// Name is the package users import
	// ("github.com/redis/rueidis/rueidislock").
	Name string
	// Module is the Go module the package ships in, whose version Version
	// reads ("github.com/redis/rueidis"); for a Python library, the module
	// its adapter imports ("kazoo"); for a Java library, its Maven
	// "group:artifact" ("org.apache.curator:curator-recipes").
	Module string
	// Language is the library's language ("Go", "Python", "Java").
	Language string
	// Python, for a Python library, is its distribution's name
	// ("kazoo", "etcd3"): Version asks PythonInterpreter for it.
	Python string
	// Debian is the Debian package that ships a Python library
	// ("python3-kazoo"): make deps installs it (Packages), and its version
	// is the library's when the interpreter imports that package's module.
	// For a Java library, the package that ships its Jar
	// ("libcurator-recipes-java").
	Debian string
	// Jar, for a Java library, is the jar its adapter loads
	// ("/usr/share/java/curator-recipes.jar"): Version reads the library's
	// version from it (jarVersion).
	Jar string
}

// Version is the library's module version as this program was built with
// it, read at run time from its build information (go.mod's pin, or the
// replacement's), never written by hand: "unknown" when the program
// carries no build information or does not link the module.
// For a Python library (Python set), it is the version PythonInterpreter
// imports, read at run time (pythonVersion); for a Java library (Jar set),
// the version of the jar its adapter loads (jarVersion).
func (l Library) Version() string {
	if l.Python != "" {
		return l.pythonVersion()
	}
	if l.Jar != "" {
		return l.jarVersion()
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path != l.Module {
			continue
		}
		if d.Replace != nil && d.Replace.Version != "" {
			return d.Replace.Version
		}
		return d.Version
	}
	return "unknown"
}

// gatedConn is a library's connection held at its client's pause gate, for
// a client that runs in the harness's process (in a process of its own,
// SIGSTOP freezes the library whole). Nothing is written while the client
// is paused, and what is read during a pause (bytes, or a timeout) reaches
// the library only after it: a paused client's library neither renews nor
// hears. Its timers still run, though, which a stopped process's do not:
// see Info.RenewsItself.
type gatedConn struct {
	net.Conn
	gate *clientfault.Gate
	ctx  context.Context // ends with the client: nobody waits at the gate
}

// gateConn wraps conn in ce's pause gate, or returns it as it is when the
// client runs alone in a process (or has no gate). ctx ends the waits.
func gateConn(ctx context.Context, conn net.Conn, ce ClientEnv) net.Conn {
	if ce.WholeProcess || ce.Gate == nil {
		return conn
	}
	return &gatedConn{Conn: conn, gate: ce.Gate, ctx: ctx}
}

func (c *gatedConn) Read(b []byte) (int, error) {
	if err := c.gate.Wait(c.ctx); err != nil {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(b)
	if werr := c.gate.Wait(c.ctx); werr != nil {
		return 0, net.ErrClosed
	}
	return n, err
}

func (c *gatedConn) Write(b []byte) (int, error) {
	if err := c.gate.Wait(c.ctx); err != nil {
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}

// pythonVersions caches each Python library's version for the life of
// the program (a compare asks once per cell).
var pythonVersions sync.Map

// PythonInterpreter is the interpreter the shipped Python adapters run
// with: Debian's, for which Debian's python3-* packages are installed (a
// python3 first on PATH may be a pyenv or venv one without them).
const PythonInterpreter = "/usr/bin/python3"

// pythonVersion is the version of the Python library l names as
// PythonInterpreter imports it: its Debian package's version (dpkg-query)
// when the module it imports is that package's file, else the
// distribution's own metadata version (a pip install in /usr/local, say);
// "unknown" when the interpreter cannot import it.
func (l Library) pythonVersion() string {
	if v, ok := pythonVersions.Load(l.Name); ok {
		return v.(string)
	}
	v := "unknown"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const probe = "import importlib, importlib.metadata as m, sys\n" +
		"mod = importlib.import_module(sys.argv[1])\n" +
		"print(mod.__file__)\n" +
		"print(m.version(sys.argv[2]))\n"
	out, err := exec.CommandContext(ctx, PythonInterpreter, "-c", probe, l.Module, l.Python).Output()
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); err == nil && len(lines) == 2 {
		v = lines[1]
		if l.Debian != "" && strings.HasPrefix(lines[0], "/usr/lib/python3/dist-packages/") {
			if owner, err := exec.CommandContext(ctx, "dpkg-query", "-S", lines[0]).Output(); err == nil &&
				strings.HasPrefix(string(owner), l.Debian+":") {
				if dv, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version}", l.Debian).Output(); err == nil && len(dv) > 0 {
					v = string(dv)
				}
			}
		}
	}
	pythonVersions.Store(l.Name, v)
	return v
}
