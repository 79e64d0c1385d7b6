package cluster

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/internal/journal"
	"github.com/locktorture/locktorture/internal/testenv"
)

// TestUndoRedisConfig: the replication cut's journaled undo gives a Redis
// its own masterauth back when replayed (a harness killed mid-failover).
func TestUndoRedisConfig(t *testing.T) {
	testenv.Require(t, "redis-server")
	// A server that asks for a password: the undo reads it again from the
	// variable the servers file named, never from the journal.
	c, err := New(Options{TempDir: t.TempDir(), Locked: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.StartRedis(context.Background(), RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := redisCall(ctx, r.endpoint(), "CONFIG", "SET", "masterauth", "owners-secret"); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Create(t.TempDir(), "dead", "run")
	if err != nil {
		t.Fatal(err)
	}
	auth := *AuthOf(r)
	auth.PasswordEnv = "LT_UNDO_TEST_PW"
	t.Setenv(auth.PasswordEnv, auth.Password)
	if _, err := j.Add(journal.Action{Kind: undoRedisConfig, Args: auth.journalArgs(map[string]string{"addr": r.Addr(), "param": "masterauth", "value": "owners-secret"})}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(j.Path()); err != nil || strings.Contains(string(b), auth.Password) {
		t.Errorf("the journal holds the server's password (%v)", err)
	}
	if _, err := redisCall(ctx, r.endpoint(), "CONFIG", "SET", "masterauth", "locktorture-cut-x"); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Replay(ctx, j.Path()); err != nil {
		t.Fatal(err)
	}
	v, err := redisCall(ctx, r.endpoint(), "CONFIG", "GET", "masterauth")
	if l := asList(v); err != nil || len(l) != 2 || l[1] != "owners-secret" {
		t.Errorf("masterauth %v (%v), want the owner's back", v, err)
	}
}

// TestUndoDocker: the journaled undo of a docker kill starts the container
// again; of a docker pause, thaws it.
func TestUndoDocker(t *testing.T) {
	testenv.RequireDocker(t, "locktorture-servers:bookworm")
	name := "lt-undo-test-" + strings.ReplaceAll(t.Name(), "/", "-")
	if out, err := exec.Command("docker", "run", "-d", "--name", name, "locktorture-servers:bookworm", "sleep", "1000").CombinedOutput(); err != nil {
		t.Fatalf("docker run: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	state := func() string {
		out, _ := exec.Command("docker", "inspect", "--format", "{{.State.Status}}", name).Output()
		return strings.TrimSpace(string(out))
	}
	for _, verb := range []string{"pause", "kill"} {
		if out, err := exec.Command("docker", verb, name).CombinedOutput(); err != nil {
			t.Fatalf("docker %s: %v: %s", verb, err, out)
		}
		if err := restoreContainer(context.Background(), name); err != nil {
			t.Fatal(err)
		}
		if s := state(); s != "running" {
			t.Errorf("after docker %s and the undo: %s, want running", verb, s)
		}
	}
}
