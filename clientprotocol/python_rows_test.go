package clientprotocol

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/internal/testenv"
)

// TestPythonAdaptersKeepTheProtocol drives each Python library row's
// shipped adapter (kazoo, python-etcd3, tooz over each driver, redis-py)
// through client-check against the real servers of its kinds, with TLS
// where the row runs with it (python-etcd3): every rule kept — a timeout
// or a cut link answered info, never fail, late grants given back,
// reconnection, close and stdin's end. Skipped (failed under CI) when a
// server or the row's Debian package is missing.
func TestPythonAdaptersKeepTheProtocol(t *testing.T) {
	servers := map[string][]string{"redis": {"redis-server"}, "zookeeper": {"java"}, "etcd": {"etcd"}, "postgres": {"postgres"}, "mariadb": {"mariadbd", "mariadb-install-db"}}
	for _, name := range backends.ProgramNames() {
		if info, _, _ := backends.Lookup(name); info.Library == nil || info.Library.Python == "" {
			continue // not a Python row: curator's is TestCuratorAdapterKeepsTheProtocol
		}
		t.Run(name, func(t *testing.T) {
			info, _, err := backends.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range info.Kinds {
				testenv.Require(t, servers[k]...)
				if k == "zookeeper" {
					if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
						testenv.Missing(t, "zookeeper")
					}
				}
			}
			if err := exec.Command(backends.PythonInterpreter, "-c", "import "+info.Library.Module).Run(); err != nil {
				testenv.Missing(t, info.Library.Debian)
			}
			p, _ := backends.ProgramOf(name)
			cmd := p.Command
			for i, a := range cmd {
				if strings.HasPrefix(a, "clients/") {
					cmd[i] = filepath.Join("..", filepath.FromSlash(a))
				}
			}
			rep, err := Check(context.Background(), CheckOptions{Command: cmd, Servers: info.Kinds, TLS: p.TLS, Timeout: libraryTimeout, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if b := rep.Broken(); len(b) > 0 {
				t.Fatalf("%d rules broken:\n%s", len(b), rep.Text())
			}
			if len(rep.Findings) < 10 {
				t.Errorf("only %d rules checked:\n%s", len(rep.Findings), rep.Text())
			}
		})
	}
}
