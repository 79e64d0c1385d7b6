package runner

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/scenarios"
)

// TestZooKeeperLeaderPartition: zk-leader-partition cuts the leader (found
// when the fault starts) from the two other members. The history records
// which member led and what it was cut from; the lock stalls while the
// others elect a new leader (no grant for a while after the cut: the
// fault reached the ensemble), grants resume after the heal (the lock is
// not left stuck), and ZooKeeper never grants the lock twice: valid.
// Grants during the cut, under the new leader, are only logged: on a
// loaded machine the followers can miss the sync limit (10 ticks of 100ms)
// and the election repeats past the 3s cut.
func TestZooKeeperLeaderPartition(t *testing.T) {
	t.Parallel() // its own servers, ports and store: beside the other parallel runs
	requireZooKeeper(t)
	out, _ := runIt(t, builtin(t, "zk-leader-partition", scenarios.Overrides{}))
	if out.Results.Valid != checker.Valid {
		t.Fatalf("verdict %s, want valid:\n%s", out.Results.Valid, out.Summary)
	}
	checkExpected(t, out)
	var start, stop time.Duration
	var grants []time.Duration
	for _, op := range readHistory(t, out) {
		switch {
		case op.F == "start-partition":
			start = time.Duration(op.Time)
			var v struct {
				Topology string              `json:"topology"`
				Leader   string              `json:"leader"`
				Cut      map[string][]string `json:"cut"`
			}
			if err := json.Unmarshal(op.Value, &v); err != nil {
				t.Fatal(err)
			}
			if v.Topology != "members" || v.Leader == "" || len(v.Cut) != 1 || len(v.Cut[v.Leader]) != 2 {
				t.Errorf("start-partition value %s: want the leader cut from the two others", op.Value)
			}
			for _, o := range v.Cut[v.Leader] {
				if o == v.Leader {
					t.Errorf("the leader cut from itself: %s", op.Value)
				}
			}
		case op.F == "stop-partition":
			stop = time.Duration(op.Time)
		case op.F == history.Acquire && op.Type == history.OK:
			grants = append(grants, time.Duration(op.Time))
		}
	}
	if start == 0 || stop == 0 {
		t.Fatalf("the partition did not happen (start %v, stop %v)", start, stop)
	}
	// The longest wait for a grant that began during the cut: the election.
	var stall time.Duration
	var during, after int
	for i, g := range grants {
		if i > 0 && grants[i-1] >= start-100*time.Millisecond && grants[i-1] < stop {
			stall = max(stall, g-grants[i-1])
		}
		if g > start && g < stop {
			during++
		}
		if g > stop {
			after++
		}
	}
	t.Logf("cut at %v for %v: the lock stalled %v; %d grants during the cut after it, %d after the heal", start.Round(time.Millisecond), (stop - start).Round(time.Millisecond), stall.Round(time.Millisecond), during, after)
	if stall < 500*time.Millisecond {
		t.Errorf("no stall after the leader's cut (longest wait %v): the cut did not reach the ensemble", stall)
	}
	if after == 0 {
		t.Errorf("no grant after the heal (%d during the cut): the lock stayed stuck", during)
	}
}
