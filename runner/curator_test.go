package runner

import (
	"os"
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

// requireCurator skips (or, under CI, fails: make deps installs them)
// unless ZooKeeper, a JDK (javac, to build the adapter) and Debian's
// Curator jars are installed.
func requireCurator(t *testing.T) {
	t.Helper()
	requireZooKeeper(t)
	if _, err := os.Stat("/usr/lib/jvm/default-java/bin/javac"); err != nil && !testenv.Has("javac") {
		testenv.Missing(t, "default-jdk-headless (javac, to build clients/java/CuratorLock.java)")
	}
	if _, err := os.Stat(backends.CuratorJar); err != nil {
		testenv.Missing(t, "libcurator-recipes-java ("+backends.CuratorJar+")")
	}
}

// TestCuratorRow runs the curator row (Apache Curator's InterProcessMutex,
// clients/java/CuratorLock.java, one JVM per client) on a real ZooKeeper:
// the no-fault baseline is valid with locks granted to several clients,
// and results.json names the library with the version of its Debian
// package, read at run time, and Java. Then the pause family on seed 1, as
// the row's claim predicts (docs/compare.md, "The Java library row"): the
// holder's JVM stopped 3s, past the 2s session, the session expires and
// ZooKeeper deletes the lock node, client 1 is granted, and the holder
// wakes to write: invalid, a stale holder and a lost update. Curator tells
// the holder only once it runs again, which is after its write.
func TestCuratorRow(t *testing.T) {
	t.Parallel() // its own servers, ports and store: beside the other parallel runs
	requireCurator(t)
	t.Run("baseline", func(t *testing.T) {
		sc := builtin(t, "baseline", scenarios.Overrides{Backend: ptr("curator"), Duration: ptr(2 * time.Second)})
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
		want, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "libcurator-recipes-java").Output()
		if err != nil {
			t.Fatal(err)
		}
		if l := r.Library; l == nil || l.Name != "Apache Curator" || l.Language != "Java" || l.Version != strings.TrimSpace(string(want)) {
			t.Errorf("library %+v, want Apache Curator %s (Java)", l, want)
		}
	})
	t.Run("pause", func(t *testing.T) {
		sc := builtin(t, "pause", scenarios.Overrides{Backend: ptr("curator")})
		if sc.Seed != 1 {
			t.Fatalf("seed %d, want the family's own, 1", sc.Seed)
		}
		out, _ := runIt(t, sc)
		r := out.Results
		if r.Valid != checker.Invalid {
			t.Fatalf("verdict %s, want invalid:\n%s", r.Valid, out.Summary)
		}
		if r.Checkers.Mutex == nil || r.Checkers.Mutex.StaleHolders == 0 {
			t.Errorf("want a stale holder, got %+v", r.Checkers.Mutex)
		}
		if r.Checkers.LostUpdate == nil || r.Checkers.LostUpdate.Valid != checker.Invalid {
			t.Errorf("want a lost update, got %+v", r.Checkers.LostUpdate)
		}
	})
}
