package docker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/docker"
	"github.com/locktorture/locktorture/cluster/kinds/etcd"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	"github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/internal/owner"
	"github.com/locktorture/locktorture/internal/testenv"
)

// newCluster is a docker-mode cluster on the local image.
func newCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	testenv.RequireDocker(t, docker.LocalImage)
	logs := t.TempDir()
	c, err := cluster.New(cluster.Options{Servers: cluster.ServersDocker, Images: map[string]string{"all": docker.LocalImage}, LogDir: logs, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if left := testenv.DockerLeftovers(t, ownerID(t)); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	})
	return c
}

func TestRedisInContainer(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	if c.Mode() != "docker" {
		t.Fatalf("mode %q", c.Mode())
	}
	r, err := redis.Start(ctx, c, redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := r.Addr()
	if strings.HasPrefix(addr, "127.") {
		t.Fatalf("a container's Redis at %s", addr)
	}
	if _, err := c.ServerVersion(ctx, r); err != nil {
		t.Fatalf("version: %v", err)
	}
	if err := r.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = c.ServerVersion(short, r)
	cancel()
	if err == nil {
		t.Fatal("a paused server answered")
	}
	if err := r.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ServerVersion(ctx, r); err != nil {
		t.Fatalf("after resume: %v", err)
	}
	// Kill while paused, then restart: same address, no keys (no persistence).
	if err := r.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Running() {
		t.Fatal("killed server still running")
	}
	if err := r.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Addr() != addr {
		t.Errorf("restarted at %s, was %s", r.Addr(), addr)
	}
	if len(c.Died()) != 0 {
		t.Errorf("died: %v (a fault's kill is not a death)", c.Died())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(r.LogPath())
	if err != nil || !strings.Contains(string(b), "Ready to accept connections") {
		t.Errorf("log %s: %v\n%s", r.LogPath(), err, b)
	}
}

func TestSentinelPostgresEtcdInContainers(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	c.EnableLinks()
	g, err := redis.StartSentinelGroup(ctx, c, false)
	if err != nil {
		t.Fatal(err)
	}
	if g.Replication == nil {
		t.Fatal("no replication link")
	}
	primary, err := g.PrimaryAddr(ctx)
	if err != nil || primary != g.Primary.Addr() {
		t.Fatalf("Sentinels name %q (%v), want %s", primary, err, g.Primary.Addr())
	}
	pg, err := postgres.Start(ctx, c, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := etcd.Start(ctx, c, etcd.Options{Ensemble: cluster.Ensemble{Members: 3}})
	if err != nil {
		t.Fatal(err)
	}
	vs := c.ServerVersions(ctx)
	for _, name := range []string{"redis-primary", "postgres", "etcd-0", "etcd-2"} {
		if vs[name] == "" {
			t.Errorf("no version for %s: %v", name, vs)
		}
	}
	if err := pg.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Members()[1].Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Members()[1].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	// Failover: the primary's container dies, the Sentinels promote the replica.
	if err := g.Primary.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		a, _ := g.PrimaryAddr(ctx)
		if a == g.Replica.Addr() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failover: Sentinels name %q", a)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestMissingImage(t *testing.T) {
	testenv.RequireDocker(t, "")
	c, err := cluster.New(cluster.Options{Servers: cluster.ServersDocker, Images: map[string]string{"redis": "locktorture-no-such-image:0"}, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = redis.Start(context.Background(), c, redis.Options{})
	if !errors.Is(err, docker.ErrImageMissing) || !strings.Contains(err.Error(), "make images") {
		t.Errorf("err = %v, want ErrImageMissing naming make images", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if left := testenv.DockerLeftovers(t, ownerID(t)); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestBadImageKind(t *testing.T) {
	_, err := cluster.New(cluster.Options{Servers: cluster.ServersDocker, Images: map[string]string{"mysql": "x"}, TempDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "mysql") {
		t.Errorf("err = %v", err)
	}
}

func ownerID(t *testing.T) string {
	id, err := owner.ID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestReaperAskedForButMissing: TESTCONTAINERS_RYUK_DISABLED=false with no
// reaper image here is said plainly, before any server (nothing pulled).
func TestReaperAskedForButMissing(t *testing.T) {
	testenv.RequireDocker(t, "")
	if out, err := exec.Command("docker", "image", "inspect", docker.RyukImage).CombinedOutput(); err == nil {
		t.Skipf("the reaper's image is here: %s", out[:min(len(out), 40)])
	}
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "false")
	_, err := cluster.New(cluster.Options{Servers: cluster.ServersDocker, Images: map[string]string{"all": docker.LocalImage}, TempDir: t.TempDir()})
	if !errors.Is(err, docker.ErrNoReaper) || !strings.Contains(err.Error(), docker.RyukImage) {
		t.Errorf("err = %v, want ErrNoReaper naming %s", err, docker.RyukImage)
	}
}

// TestAnyRunSweeps: what a killed docker run left (a container labelled
// with an owner that is gone) is removed by SweepLeftovers, which every
// run calls whatever its mode — a local run too.
func TestAnyRunSweeps(t *testing.T) {
	testenv.RequireDocker(t, docker.LocalImage)
	host, _ := os.Hostname()
	name := fmt.Sprintf("lt-sweep-test-%d", os.Getpid())
	out, err := exec.Command("docker", "create", "--name", name, "--label", docker.LabelOwner+"=2147483 1", "--label", docker.LabelHost+"="+host,
		docker.LocalImage, "sleep", "1000").CombinedOutput()
	if err != nil {
		t.Fatalf("docker create: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	removed := cluster.SweepLeftovers(context.Background(), t.TempDir())
	if !slices.Contains(removed, "container "+name) {
		t.Errorf("swept %v, want container %s", removed, name)
	}
	if err := exec.Command("docker", "inspect", name).Run(); err == nil {
		t.Errorf("container %s still there", name)
	}
}
