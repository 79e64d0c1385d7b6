package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/scenarios"
)

// killServersIn SIGKILLs every redis-server working under dir, as a crash
// (or a SHUTDOWN from outside) would end it.
func killServersIn(dir string) int {
	n := 0
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmd, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		if !strings.Contains(string(cmd), "redis-server") || !strings.HasPrefix(cwd, dir) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// TestServerDeathIsAHarnessError: a server that dies mid-run with no fault
// asking it to is the harness's failure (exit 255), naming the server and
// its log — never a valid verdict on a run that tested nothing.
func TestServerDeathIsAHarnessError(t *testing.T) {
	requireRedis(t)
	sc := builtin(t, "baseline", scenarios.Overrides{Duration: ptr(800 * time.Millisecond)})
	tmp := t.TempDir()
	var once sync.Once
	var killed atomic.Int32
	opt := Options{Store: t.TempDir(), TempDir: tmp, Observe: func(op history.Op) {
		if op.F == history.Acquire && op.Type == history.OK {
			once.Do(func() { go func() { killed.Add(int32(killServersIn(tmp))) }() })
		}
	}}
	out, err := Run(context.Background(), sc, opt)
	if killed.Load() == 0 {
		t.Fatal("found no redis-server to kill")
	}
	if !errors.Is(err, errServerDied) || !strings.Contains(err.Error(), "redis-0") || !strings.Contains(err.Error(), ".log") {
		var v string
		if out != nil {
			v = out.Results.Valid.String()
		}
		t.Fatalf("got verdict %q, error %v; want ErrServerDied naming redis-0 and its log", v, err)
	}
	assertNothingLeft(t, tmp)
}

// TestExternalServerDeathIsAHarnessError: someone else's server that goes
// away mid-run (a SHUTDOWN from outside) fails the run as a local one does
// (exit 255, naming it) — never a valid verdict.
func TestExternalServerDeathIsAHarnessError(t *testing.T) {
	requireRedis(t)
	// The run's namespace cannot be removed from a server that is gone:
	// its journal stays, in the test's own directory.
	t.Setenv("LOCKTORTURE_JOURNAL_DIR", t.TempDir())
	c, err := cluster.New(cluster.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := redis.Start(context.Background(), c, redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(file, []byte("redis: ["+r.Addr()+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := builtin(t, "baseline", scenarios.Overrides{Duration: ptr(2 * time.Second), Servers: ptr(cluster.ServersExternal), ServersFile: &file})
	var once sync.Once
	opt := Options{Store: t.TempDir(), TempDir: t.TempDir(), Observe: func(op history.Op) {
		if op.F == history.Acquire && op.Type == history.OK {
			once.Do(func() { go func() { _ = r.Stop(context.Background()) }() })
		}
	}}
	out, err := Run(context.Background(), sc, opt)
	if !errors.Is(err, errServerDied) || !strings.Contains(err.Error(), "redis-0") || !strings.Contains(err.Error(), r.Addr()) {
		var v string
		if out != nil {
			v = out.Results.Valid.String()
		}
		t.Fatalf("got verdict %q, error %v; want ErrServerDied naming redis-0 and its address", v, err)
	}
}
