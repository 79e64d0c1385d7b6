package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/scenarios"
)

// TestFailoverLeader: the failover family's etcd and ZooKeeper side
// (failover-leader, three members) kills the member that leads when
// client 0 is granted the lock and restarts it 2.5s later. The history
// records the leader and that it alone was killed (and the member's own
// log says it led; another member's says it leads after); the lock stalls
// (requests fail or wait while there is no leader), is granted again
// under the new leader, and again after the old one is back; and it is
// never granted twice: valid, as the scenario expects.
func TestFailoverLeader(t *testing.T) {
	t.Parallel() // its own servers, ports and store: beside the other parallel runs
	for _, tc := range []struct {
		backend string
		require func(*testing.T)
		// led is what a member's log says when it becomes the leader.
		led string
	}{
		{"etcd", requireEtcd, "became leader at term"},
		{"zookeeper", requireZooKeeper, "Peer state changed: leading"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			tc.require(t)
			out, _ := runIt(t, builtin(t, "failover-leader", scenarios.Overrides{Backend: ptr(tc.backend)}))
			if out.Results.Valid != checker.Valid {
				t.Fatalf("verdict %s, want valid:\n%s", out.Results.Valid, out.Summary)
			}
			checkExpected(t, out)
			f := leaderKill(t, readHistory(t, out))
			checkLeaderLogs(t, out.Dir, tc.backend, f.leader, tc.led)
			t.Logf("%s: leader %s killed at %v, restarted at %v; %d requests failed or waited after the kill; next grant %v after the kill, %v after the restart",
				tc.backend, f.leader, f.kill.Round(time.Millisecond), f.restart.Round(time.Millisecond), f.unavailable,
				(f.grantAfterKill - f.kill).Round(time.Millisecond), (f.grantAfterRestart - f.restart).Round(time.Millisecond))
			if f.unavailable == 0 {
				t.Errorf("no request failed or waited after the leader's kill: the kill did not reach the lock")
			}
			if f.grantAfterKill == 0 || f.grantAfterKill > f.restart {
				t.Errorf("no grant under the new leader (after the kill at %v, before the restart at %v)", f.kill, f.restart)
			}
			if f.grantAfterRestart == 0 {
				t.Errorf("no grant after the old leader's restart at %v", f.restart)
			}
		})
	}
}

// leaderKillFacts is what a failover-leader history says of the kill.
type leaderKillFacts struct {
	leader                            string
	kill, restart                     time.Duration
	grantAfterKill, grantAfterRestart time.Duration
	// unavailable counts the client requests invoked after the kill (and
	// done before the restart) that failed for another reason than a busy
	// lock, or took 250ms or more (the lock service had no leader).
	unavailable int
}

// leaderKill reads the kill and restart ops (the kill's value must name
// the leader and kill it alone), the grants after each, and the requests
// the leaderless ensemble failed or held.
func leaderKill(t *testing.T, ops []history.Op) leaderKillFacts {
	t.Helper()
	var f leaderKillFacts
	invoked := map[int]history.Op{}
	for _, op := range ops {
		at := time.Duration(op.Time)
		switch {
		case op.F == "kill":
			var v struct {
				Leader  string   `json:"leader"`
				Servers []string `json:"servers"`
			}
			if err := json.Unmarshal(op.Value, &v); err != nil {
				t.Fatal(err)
			}
			if v.Leader == "" || !slices.Equal(v.Servers, []string{v.Leader}) {
				t.Errorf("kill value %s: want the leader named and killed alone", op.Value)
			}
			f.leader, f.kill = v.Leader, at
		case op.F == "restart":
			f.restart = at
		case op.IsNemesis() || op.F == history.FinalRead:
		case op.Type == history.Invoke:
			invoked[op.Process] = op
		default:
			inv := invoked[op.Process]
			if f.kill > 0 && f.restart == 0 && time.Duration(inv.Time) >= f.kill && (op.Type != history.OK && op.Error != "busy" || op.Time-inv.Time >= int64(250*time.Millisecond)) {
				f.unavailable++
			}
			if op.F == history.Acquire && op.Type == history.OK {
				if f.kill > 0 && f.grantAfterKill == 0 {
					f.grantAfterKill = at
				}
				if f.restart > 0 && f.grantAfterRestart == 0 {
					f.grantAfterRestart = at
				}
			}
		}
	}
	if f.kill == 0 || f.restart == 0 {
		t.Fatalf("the leader was not killed and restarted (kill at %v, restart at %v)", f.kill, f.restart)
	}
	return f
}

// checkLeaderLogs checks, in the members' own logs, that the member
// killed (by its letter: A is the first member) had led, and that another
// member became the leader too (the one elected after the kill).
func checkLeaderLogs(t *testing.T, dir, kind, leader, led string) {
	t.Helper()
	if len(leader) != 1 || leader[0] < 'A' || leader[0] > 'C' {
		t.Fatalf("leader %q is not a letter of the three members", leader)
	}
	others := 0
	for i := range 3 {
		b, err := os.ReadFile(filepath.Join(dir, kind+"-"+string(rune('0'+i))+".log"))
		if err != nil {
			t.Fatal(err)
		}
		switch says := strings.Contains(string(b), led); {
		case i == int(leader[0]-'A') && !says:
			t.Errorf("%s-%d (%s), killed as the leader, never says %q in its log", kind, i, leader, led)
		case i != int(leader[0]-'A') && says:
			others++
		}
	}
	if others == 0 {
		t.Errorf("no other member says %q in its log: no new leader was elected", led)
	}
}
