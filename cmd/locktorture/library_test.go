package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/internal/testenv"
)

// TestLibraryRows runs each library row through the built program, on real
// servers: the baseline comes out valid (no false alarm) and the pause
// family invalid with stale holders, as the family expects of every lease.
// results.json names the library — its package, a version read from the
// program's build information (go.mod's pin: a v-version, never
// "unknown" here) and its language — and the rows that renew by
// themselves ran their clients as processes (the pause a real SIGSTOP),
// redislock (no renewal of its own) in the harness's process.
func TestLibraryRows(t *testing.T) {
	for _, tc := range []struct {
		backend, server, library string
		process                  bool
	}{
		{"rueidislock", "redis-server", "github.com/redis/rueidis/rueidislock", true},
		{"rueidislock-1", "redis-server", "github.com/redis/rueidis/rueidislock", true},
		{"zk-lock", "java", "github.com/go-zookeeper/zk", true},
		{"etcd-concurrency", "etcd", "go.etcd.io/etcd/client/v3/concurrency", true},
		{"redislock", "redis-server", "github.com/bsm/redislock", false},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			testenv.Require(t, tc.server)
			if tc.server == "java" {
				if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
					testenv.Missing(t, "zookeeper")
				}
			}
			scs := []struct{ scenario, want string }{{"baseline", "valid"}, {"pause", "invalid"}}
			if !tc.process {
				scs = scs[:1]
			}
			for _, sc := range scs {
				store := t.TempDir()
				args := []string{"run", "--scenario", sc.scenario, "--backend", tc.backend, "--store", store, "--quiet"}
				if sc.scenario == "baseline" {
					args = append(args, "--duration", "1s")
				}
				out, err := exec.Command(binPath, args...).CombinedOutput()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				dir, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
				if err != nil {
					t.Fatalf("%s: no run stored (exit %d): %v\n%s", sc.scenario, code, err, out)
				}
				b, err := os.ReadFile(filepath.Join(dir, "results.json"))
				if err != nil {
					t.Fatal(err)
				}
				var res checker.Results
				if err := json.Unmarshal(b, &res); err != nil {
					t.Fatal(err)
				}
				if res.Valid.String() != sc.want {
					t.Errorf("%s: verdict %s (exit %d), want %s\n%s", sc.scenario, res.Valid, code, sc.want, out)
				}
				if sc.want == "invalid" && (res.Checkers.Mutex == nil || res.Checkers.Mutex.StaleHolders == 0) {
					t.Errorf("%s: want stale holders: %+v", sc.scenario, res.Checkers.Mutex)
				}
				l := res.Library
				if l == nil || l.Name != tc.library || l.Language != "Go" || !strings.HasPrefix(l.Version, "v") {
					t.Errorf("%s: library %+v, want %s, a version from the build info, Go", sc.scenario, l, tc.library)
				}
				log, err := os.ReadFile(filepath.Join(dir, "run.log"))
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Contains(string(log), "clients: 2 processes") || strings.Contains(string(log), "clients: 5 processes"); got != tc.process {
					t.Errorf("%s: clients as processes %v, want %v (run.log)", sc.scenario, got, tc.process)
				}
			}
		})
	}
}
