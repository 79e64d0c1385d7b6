package runner

import (
	"os"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/zookeeper"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/scenarios"
)

func requireZooKeeper(t *testing.T) {
	t.Helper()
	testenv.Require(t, "java")
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		testenv.Missing(t, "zookeeper")
	}
}

// TestBaselineZooKeeper: no faults, 5 clients on 2 keys, on 1 and 3
// members: the recipe is valid (no false alarm), grants many locks under
// contention, and each key's grants carry growing fences (czxids).
func TestBaselineZooKeeper(t *testing.T) {
	requireZooKeeper(t)
	for _, members := range []int{1, 3} {
		t.Run(map[int]string{1: "one", 3: "three"}[members], func(t *testing.T) {
			sc := builtin(t, "baseline", scenarios.Overrides{Backend: ptr("zookeeper"), Duration: ptr(2 * time.Second)})
			sc.SetKindOptions(zookeeper.Kind, &zookeeper.Options{Ensemble: cluster.Ensemble{Members: members}})
			out, _ := runIt(t, sc)
			r := out.Results
			if r.Valid != checker.Valid || out.Expected.Valid != "valid" {
				t.Fatalf("verdict %s (expected %s), want valid:\n%s", r.Valid, out.Expected.Valid, out.Summary)
			}
			if h := r.Checkers.Mutex.Holds; h <= 20 {
				t.Errorf("only %d holds: the run hardly checked anything", h)
			}
			last := map[string]int64{}
			for _, op := range readHistory(t, out) {
				if op.F == history.Acquire && op.Type == history.OK {
					if op.Fence == nil || *op.Fence <= last[op.Key] || op.LeaseMS == nil {
						t.Fatalf("acquire of %s with fence %v (lease %v) after fence %d", op.Key, op.Fence, op.LeaseMS, last[op.Key])
					}
					last[op.Key] = *op.Fence
				}
			}
			t.Logf("%d members: %d holds", members, r.Checkers.Mutex.Holds)
		})
	}
}

// TestZooKeeperPause: zk-pause and zk-pause-fenced. The paused client sends
// no ping, the ensemble expires its session and hands the lock on: a stale
// holder (never a double grant), and at the unfenced resource a lost
// update; with fencing by czxid the stale write is rejected and nothing is
// lost.
func TestZooKeeperPause(t *testing.T) {
	requireZooKeeper(t)
	for _, tc := range []struct {
		scenario      string
		lostUpdate    checker.Validity
		rejectedStale bool
	}{
		{"zk-pause", checker.Invalid, false},
		{"zk-pause-fenced", checker.Valid, true},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			out, _ := runIt(t, builtin(t, tc.scenario, scenarios.Overrides{}))
			c := out.Results.Checkers
			if out.Results.Valid != checker.Invalid || c.Mutex.Valid != checker.Invalid {
				t.Fatalf("the lock should fail: %s", out.Summary)
			}
			if c.Mutex.StaleHolders == 0 || c.Mutex.DoubleGrants != 0 {
				t.Errorf("want stale holders only: %+v", c.Mutex)
			}
			if v := c.Mutex.Violations[0]; v.Earlier.Process != 0 || v.Later.Process != 1 {
				t.Errorf("first overlap: %+v", v)
			}
			if c.LostUpdate.Valid != tc.lostUpdate {
				t.Errorf("lost-update %s, want %s: %+v", c.LostUpdate.Valid, tc.lostUpdate, c.LostUpdate)
			}
			if got := c.Fencing.RejectedStale > 0; got != tc.rejectedStale {
				t.Errorf("stale writes rejected: %d, want some: %v", c.Fencing.RejectedStale, tc.rejectedStale)
			}
			checkExpected(t, out)
		})
	}
}
