package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/internal/testenv"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/scenarios"
)

// long lists built-in scenarios too long for `make test` (make soak runs them).
var long = map[string]bool{"chaos": true, "chaos-pg": true}

// families lists the fault families that `make compare` runs on every
// backend and 3 seeds; make test runs only pause and kill-session here
// (failover-leader runs for etcd and ZooKeeper in TestFailoverLeader).
var families = map[string]bool{"partition": true, "delay": true, "restart": true, "clock": true, "failover-leader": true}

// needs skips a scenario whose servers are not installed.
func needs(t *testing.T, sc *scenarios.Scenario) {
	t.Helper()
	if _, _, err := backends.Lookup(sc.Backend); err != nil {
		t.Fatal(err)
	}
	bins := map[string]string{"redis": "redis-server", "etcd": "etcd", "postgres": "postgres", "zookeeper": "java", "pgbouncer": "pgbouncer", "mariadb": "mariadbd"}
	for _, k := range sc.ServerKinds() {
		if bins[k] != "" {
			testenv.Require(t, bins[k])
		}
	}
}

// TestBuiltinScenarios runs every canonical scenario with its own backend
// and seed: each must give the verdict its file expects — overall and per
// checker. A scenario that expects invalid proves the checkers can see.
// The scenarios run two at a time.
func TestBuiltinScenarios(t *testing.T) {
	for _, name := range scenarios.BuiltinNames() {
		if long[name] || families[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			// Two at a time (go test's -parallel): each run has servers,
			// ports and stores of its own, and its story is ordered by its
			// steps, not by the machine's speed, as matrix --parallel's are.
			t.Parallel()
			sc, err := scenarios.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			needs(t, sc)
			want := sc.Expected(sc.Backend)
			if want.Valid == "" {
				want.Valid = "valid"
			}
			out := runTested(t, want.Valid, func() *Outcome {
				out, err := Run(context.Background(), sc, Options{Store: t.TempDir(), TempDir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				return out
			})
			if got := out.Results.Valid.String(); got != want.Valid {
				t.Errorf("verdict %s, expected %s:\n%s", got, want.Valid, out.Summary)
			}
			got := out.Results.Checkers.Verdicts()
			for c, v := range want.Checkers {
				if g, ok := got[c]; !ok || g.String() != v {
					t.Errorf("checker %s: %v, expected %s", c, got[c], v)
				}
			}
			if out.Results.Valid == checker.Valid && out.Results.Note != "" && strings.Contains(out.Results.Note, "nothing was checked") {
				t.Errorf("valid without checking anything: %s", out.Results.Note)
			}
		})
	}
}
