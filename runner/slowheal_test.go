package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// TestSlowRestartKeepsRunTime: a killed server that takes longer to come
// back than the run has left (a ZooKeeper JVM on a loaded machine: 6.3s
// against failover-leader's 6s) still gets the run's time after its
// restart. The clients run for the scenario's duration plus the time the
// restart took, so they are answered by the restarted server, as the
// scenario planned, and the run is valid. They used to stop before the
// restart, which was then recorded after every client op, and the run was
// unknown (no client held the lock while the kill acted or a TTL after). The slow start is made by a redis-server
// on PATH that waits before its second start (the restart), longer than
// the run's whole duration: the check does not depend on the machine's
// speed.
func TestSlowRestartKeepsRunTime(t *testing.T) {
	requireRedis(t)
	real, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	bin, mark := t.TempDir(), filepath.Join(t.TempDir(), "started")
	script := "#!/bin/sh\n" +
		"case \"$1\" in -v|--version) exec " + real + " \"$@\";; esac\n" +
		"if [ -e " + mark + " ]; then sleep 3; fi\n" +
		"touch " + mark + "\n" +
		"exec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "redis-server"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	sc := parse(t, nemesisBase+`
nemesis:
  script:
    - fault: kill
      servers: [A]
      at: 100ms
      for: 100ms
`)
	out, _ := runIt(t, sc)
	ops := readHistory(t, out)
	var restart int64
	answered := 0
	invoked := map[int]history.Op{}
	for _, op := range ops {
		switch {
		case op.F == "restart":
			restart = op.Time
		case op.IsNemesis() || op.F == history.FinalRead:
		case op.Type == history.Invoke:
			invoked[op.Process] = op
		case restart > 0 && invoked[op.Process].Time > restart && op.Type == history.OK:
			answered++
		}
	}
	if restart == 0 {
		t.Fatalf("no restart recorded: %s", out.Summary)
	}
	if out.Results.Valid != checker.Valid {
		t.Errorf("verdict %s, want valid (the clients held the lock again after the restart):\n%s", out.Results.Valid, out.Summary)
	}
	if answered == 0 {
		t.Errorf("no client request made after the restart (at %v) was answered: the run ended before the restarted server served", time.Duration(restart))
	}
	b, err := os.ReadFile(filepath.Join(out.Dir, "run.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "faults took to heal") {
		t.Errorf("run.log does not say the run was made longer by the restart:\n%s", b)
	}
	t.Logf("restart at %v; %d requests made after it answered", time.Duration(restart).Round(time.Millisecond), answered)
}
