package runner

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/scenarios"
)

// TestLateFailoverIsUnknown: a failover that promotes the replica only
// after the clients' last acquire tested nothing: no client met the new
// primary. Here the Sentinels are left to notice the dead primary on
// their own (no forced failover: about 4s) while the clients run 1s, so
// the promotion comes after them; the run is unknown, saying when the
// failover took effect, not valid as it was when the machine was too slow
// for the failover scenario (TestScenariosInDocker under load: client 0
// held the whole run, client 1 never met the new primary). Its restart op
// records how long the promotion took.
func TestLateFailoverIsUnknown(t *testing.T) {
	testenv.Require(t, "redis-server", "redis-sentinel")
	sc, err := scenarios.Parse([]byte(`name: late-failover
backend: redis-token
redis: sentinel
clients: 2
keys: 1
ttl: 20s
hold: 1s
duration: 1s
timeout: 500ms
think_min: 20ms
think_max: 50ms
nemesis:
  script:
    - fault: partition
      topology: replication
      for: 1h
    - fault: failover
      on: acquire
      for: 1s
checkers: [mutex, linearizable, lost-update, stats]
`), "late-failover.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := runIt(t, sc)
	if out.Results.Valid != checker.Unknown {
		t.Errorf("verdict %s, want unknown:\n%s", out.Results.Valid, out.Summary)
	}
	if n := out.Results.Note; !strings.Contains(n, "on acquire for 1s struck at") || !(strings.Contains(n, "took effect only at") || strings.Contains(n, "never took effect")) {
		t.Errorf("the note does not say the failover took effect too late: %s", n)
	}
	for _, op := range readHistory(t, out) {
		if op.IsNemesis() && op.F == "restart" && !strings.Contains(string(op.Value), "promoted_ms") && !strings.Contains(string(op.Value), "none") {
			t.Errorf("the restart op says neither when the replica was promoted nor that it was not: %s", op.Value)
		}
	}
}
