package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/internal/testenv"

	"github.com/locktorture/locktorture/internal/leakcheck"
)

func TestRedisLifecycle(t *testing.T) {
	testenv.Require(t, "redis-server")
	ctx := context.Background()
	tmp := t.TempDir()
	c, err := New(Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.StartRedis(ctx, RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader(ctx); err == nil || !strings.Contains(err.Error(), "no ensemble with a leader") {
		t.Errorf("a Redis run's leader: %v, want none", err)
	}
	// The leak check sees a running server (so its silence later means something).
	if len(leakcheck.ProcessesUnder(tmp)) != 1 {
		t.Fatalf("leak check does not see the server: %v", leakcheck.ProcessesUnder(tmp))
	}
	if err := r.ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	port := r.Port()

	if err := r.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if state := testenv.ProcState(t, r.PID()); state != "T" {
		t.Errorf("paused server in state %q, want T", state)
	}
	if err := r.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.ping(ctx); err != nil {
		t.Errorf("ping after resume: %v", err)
	}

	if err := r.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Running() || r.ping(ctx) == nil {
		t.Fatal("killed server still answers")
	}
	if err := r.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Port() != port || r.ping(ctx) != nil {
		t.Errorf("restart: port %d (was %d), ping %v", r.Port(), port, r.ping(ctx))
	}

	// A paused server is still stopped by Close.
	if err := r.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
		t.Errorf("left after Close: %v", left)
	}
	if left := leakcheck.TempDirsLeft(tmp); len(left) > 0 {
		t.Errorf("temp dirs left after Close: %v", left)
	}
	if _, err := c.StartRedis(ctx, RedisOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("start on a closed cluster: %v", err)
	}
}

func TestMissingBinaryNamesPackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	c, err := New(Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.StartRedis(context.Background(), RedisOptions{})
	if !errors.Is(err, ErrMissingBinary) {
		t.Fatalf("want ErrMissingBinary, got %v", err)
	}
	if want := "install the Debian package redis-server"; !contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

func itoa(n int) string { return fmtInt(n) }

func contains(s, sub string) bool { return len(sub) == 0 || indexOf(s, sub) >= 0 }
