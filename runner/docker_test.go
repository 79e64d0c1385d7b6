package runner

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/docker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/owner"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/scenarios"
)

// inDocker is the override that runs a scenario's servers in containers
// of the image make images builds.
func inDocker() scenarios.Overrides {
	return scenarios.Overrides{Servers: ptr(cluster.ServersDocker), Images: map[string]string{"all": docker.LocalImage}}
}

// assertNoContainers checks that this process left no container or network.
// dockerRuns keeps the container tests one at a time: they run in parallel
// with nothing else (t.Parallel only puts them after the package's other
// tests), and each checks that no container of this process is left.
var dockerRuns sync.Mutex

func assertNoContainers(t *testing.T) {
	t.Helper()
	ownerID, err := owner.ID()
	if err != nil {
		t.Fatal(err)
	}
	if left := testenv.DockerLeftovers(t, ownerID); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestScenariosInDocker runs canonical scenarios with every server in a
// container: each gives the verdict it gives with local servers, the
// record names the mode, the image and the servers' versions, and no
// container or network is left.
func TestScenariosInDocker(t *testing.T) {
	t.Parallel() // after the package's other tests: make test may still be building the image
	dockerRuns.Lock()
	defer dockerRuns.Unlock()
	testenv.RequireDocker(t, docker.LocalImage)
	for _, c := range []struct{ scenario, backend string }{
		{"kleppmann-pause", ""},
		{"kleppmann-fenced", ""},
		{"failover", ""},
		{"redlock-clock-jump", ""},
		{"redlock-restart", ""}, // a restart "at once" must be one: a killed server refuses at once
		{"pg-terminate", ""},
		{"pg-bouncer-transaction", ""}, // PgBouncer's container in front of PostgreSQL's
		{"mysql-for-update-kill", ""},  // MariaDB made at its container's first start; KILL CONNECTION
		{"etcd-pause", ""},
		{"baseline", "redis-token"},
		{"baseline", "redlock"},
		{"baseline", "pg-advisory"},
		{"baseline", "etcd"},
	} {
		t.Run(c.scenario+"/"+c.backend, func(t *testing.T) {
			o := inDocker()
			if c.backend != "" {
				o.Backend = ptr(c.backend)
			}
			sc := builtin(t, c.scenario, o)
			want := sc.Expected(sc.Backend).Valid
			if want == "" {
				want = "valid"
			}
			// Under load a container's Sentinel may promote the replica
			// only after the clients' last acquire: such a run is unknown
			// (it did not test the failover) and is run again.
			out := runTested(t, want, func() *Outcome {
				out, _ := runIt(t, sc)
				assertNoContainers(t)
				return out
			})
			if got := out.Results.Valid.String(); got != want {
				t.Errorf("verdict %s, expected %s:\n%s", got, want, out.Summary)
			}
			s := out.Results.Servers
			if s == nil || s.Mode != cluster.ServersDocker || len(s.Images) == 0 || len(s.Versions) == 0 {
				t.Fatalf("results name no docker servers: %+v", s)
			}
			for kind, img := range s.Images {
				if img != docker.LocalImage {
					t.Errorf("%s ran from %s, want %s", kind, img, docker.LocalImage)
				}
			}
		})
	}
}

// TestInterruptedFailoverInDocker stops a run (as Ctrl-C does) while the
// failover nemesis has killed the primary's container: the run ends as
// interrupted and leaves no container and no network.
func TestInterruptedFailoverInDocker(t *testing.T) {
	t.Parallel()
	dockerRuns.Lock()
	defer dockerRuns.Unlock()
	testenv.RequireDocker(t, docker.LocalImage)
	sc := builtin(t, "failover", inDocker())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt := Options{Store: t.TempDir(), TempDir: t.TempDir(), Observe: func(op history.Op) {
		if op.Process == history.NemesisProcess && op.F == "failover" {
			time.AfterFunc(50*time.Millisecond, cancel)
		}
	}}
	_, err := Run(ctx, sc, opt)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("want ErrInterrupted, got %v", err)
	}
	assertNoContainers(t)
}
