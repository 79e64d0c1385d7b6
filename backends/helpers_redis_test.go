package backends

import (
	"context"
	"testing"
	"time"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/internal/testenv"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/leakcheck"
)

// testCluster returns a cluster whose servers are all gone, and checked to
// be gone, when the test ends.
func testCluster(t testing.TB) *cluster.Cluster {
	t.Helper()
	testenv.Require(t, "redis-server")
	tmp := t.TempDir()
	cl, err := cluster.New(cluster.Options{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Close(); err != nil {
			t.Errorf("cluster close: %v", err)
		}
		if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
			t.Errorf("servers left running: %v", left)
		}
		if left := leakcheck.TempDirsLeft(tmp); len(left) > 0 {
			t.Errorf("temporary directories left: %v", left)
		}
	})
	return cl
}

// testProc is one simulated client process: its gate, clock and history.
type testProc struct {
	env ClientEnv
	rec *history.Recorder
}

func newTestProc(p int) *testProc {
	rec := history.NewRecorder(nil, history.RecorderOptions{Keep: true})
	return &testProc{rec: rec, env: ClientEnv{Process: p, Gate: clientfault.NewGate(), Clock: clientfault.NewClock(), History: rec.Proc(p)}}
}

// guard bounds a test step that would otherwise hang when the code under
// test is broken; it is not a speed limit.
func guard(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// keyExists asks a server directly whether the lock key is set.
func keyExists(t testing.TB, addr, key string) bool {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rc.Close()
	n, err := rc.Exists(context.Background(), defaultRedisKeys.of(key)).Result()
	if err != nil {
		t.Fatalf("exists on %s: %v", addr, err)
	}
	return n == 1
}
