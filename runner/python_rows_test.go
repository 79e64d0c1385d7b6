package runner

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/scenarios"
)

// requireProgramRow skips (or, under CI, fails) unless the servers of the
// program row name and its library (its Debian package, imported by
// Debian's /usr/bin/python3) are installed.
func requireProgramRow(t *testing.T, name string) backends.Info {
	t.Helper()
	info, _, err := backends.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range info.Kinds {
		switch k {
		case "redis":
			requireRedis(t)
		case "zookeeper":
			requireZooKeeper(t)
		case "etcd":
			requireEtcd(t)
		case "postgres":
			requirePostgres(t)
		case "mariadb":
			testenv.Require(t, "mariadbd", "mariadb-install-db")
		default:
			t.Fatalf("%s: no requirement known for kind %s", name, k)
		}
	}
	l := info.Library
	if err := exec.Command(backends.PythonInterpreter, "-c", "import "+l.Module).Run(); err != nil {
		testenv.Missing(t, l.Debian)
	}
	for _, p := range backends.ClientPackages() {
		if p.Backend == name && exec.Command("dpkg-query", "-W", p.Name).Run() != nil {
			testenv.Missing(t, p.Name)
		}
	}
	return info
}

// TestPythonRowsBaseline runs each Python library row (`--backend NAME`)
// through the no-fault baseline against real servers: valid (no false
// alarm), locks granted to several clients, and results.json names the
// library with the version of its Debian package, read at run time
// (dpkg-query), and its language. python-etcd3's run is over TLS (the
// row's default): on plaintext gRPC refuses its login and nothing would
// be granted.
func TestPythonRowsBaseline(t *testing.T) {
	t.Parallel() // its own servers, ports and store: beside the other parallel runs
	for _, name := range backends.ProgramNames() {
		if info, _, _ := backends.Lookup(name); info.Library == nil || info.Library.Python == "" {
			continue // not a Python row: curator's is TestCuratorRow
		}
		t.Run(name, func(t *testing.T) {
			info := requireProgramRow(t, name)
			sc := builtin(t, "baseline", scenarios.Overrides{Backend: ptr(name), Duration: ptr(2 * time.Second)})
			if p, _ := backends.ProgramOf(name); p.TLS != (sc.Security == scenarios.SecurityTLS) {
				t.Fatalf("security %q, want TLS %v", sc.Security, p.TLS)
			}
			out, _ := runIt(t, sc)
			r := out.Results
			if r.Valid != checker.Valid {
				t.Fatalf("verdict %s, want valid:\n%s", r.Valid, out.Summary)
			}
			granted := map[int]int{}
			for _, op := range readHistory(t, out) {
				if op.F == history.Acquire && op.Type == history.OK {
					granted[op.Process]++
				}
			}
			if len(granted) < 2 {
				t.Errorf("grants by client: %v, want at least two clients granted", granted)
			}
			want, err := exec.Command("dpkg-query", "-W", "-f=${Version}", info.Library.Debian).Output()
			if err != nil {
				t.Fatal(err)
			}
			lib := r.Library
			if lib == nil || lib.Name != info.Library.Name || lib.Language != "Python" || lib.Version != strings.TrimSpace(string(want)) {
				t.Errorf("library %+v, want %s %s (Python)", lib, info.Library.Name, want)
			}
		})
	}
}

// TestPythonRowsPause runs the pause family (the holder frozen by SIGSTOP
// for 3s, past the 2s lease) on two rows whose claims differ: kazoo's lock
// is an ephemeral znode, gone when the frozen client's session expires,
// so the holder wakes as a stale holder; tooz's postgresql lock is an
// advisory lock of the holder's own connection, which a pause does not
// end, so the other client waits.
func TestPythonRowsPause(t *testing.T) {
	t.Parallel() // its own servers, ports and store: beside the other parallel runs
	for _, c := range []struct {
		name string
		want checker.Validity
	}{{"kazoo", checker.Invalid}, {"tooz-postgresql", checker.Valid}} {
		t.Run(c.name, func(t *testing.T) {
			requireProgramRow(t, c.name)
			out, _ := runIt(t, builtin(t, "pause", scenarios.Overrides{Backend: ptr(c.name)}))
			r := out.Results
			if r.Valid != c.want {
				t.Fatalf("verdict %s, want %s:\n%s", r.Valid, c.want, out.Summary)
			}
			if c.want == checker.Invalid && (r.Checkers.Mutex == nil || r.Checkers.Mutex.StaleHolders == 0) {
				t.Errorf("want a stale holder, got %+v", r.Checkers.Mutex)
			}
		})
	}
}
