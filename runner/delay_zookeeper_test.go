package runner

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/scenarios"
)

// TestDelayZooKeeper: the delay family's zookeeper rows, plain and
// fenced, are valid and put the delay to the test. With a session as
// short as the family's 2s lease, go-zookeeper dropped client 0's
// connection under the 2.5s delay and never worked again, and nobody
// held the lock after 0.7s: unknown, "a planned fault was not put to the
// test". The family gives the rows a 5s session (backend_options).
func TestDelayZooKeeper(t *testing.T) {
	requireZooKeeper(t)
	for _, fencing := range []string{"none", "all"} {
		t.Run("fencing "+fencing, func(t *testing.T) {
			sc := builtin(t, "delay", scenarios.Overrides{Backend: ptr("zookeeper"), Fencing: ptr(fencing)})
			out, _ := runIt(t, sc)
			r := out.Results
			if r.Valid != checker.Valid {
				t.Fatalf("verdict %s, want valid:\n%s", r.Valid, out.Summary)
			}
			if strings.Contains(r.Note, "not put to the test") {
				t.Errorf("valid, yet: %s", r.Note)
			}
		})
	}
}
