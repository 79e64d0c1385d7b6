package backends

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/leakcheck"
)

// etcdBenchClients is the number of concurrent lock clients, each cycling
// on a key of its own (no contention: the lock service's own cost).
const etcdBenchClients = 8

// etcdBenchCluster starts a one-member etcd whose process is checked to be
// gone when the benchmark ends.
func etcdBenchCluster(b *testing.B) (*cluster.Cluster, *cluster.Etcd) {
	b.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		b.Skip("etcd not installed (make deps: Debian package etcd-server)")
	}
	tmp := b.TempDir()
	cl, err := cluster.New(cluster.Options{TempDir: tmp})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := cl.Close(); err != nil {
			b.Errorf("cluster close: %v", err)
		}
		if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
			b.Errorf("servers left running: %v", left)
		}
	})
	e, err := cl.Etcd(context.Background(), cluster.EtcdOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return cl, e
}

// runCycles shares b.N cycles among the clients and reports cycles/s.
func runCycles(b *testing.B, cycle func(p int) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, etcdBenchClients)
	b.ResetTimer()
	start := time.Now()
	for p := range etcdBenchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := cycle(p); err != nil {
					errs[p] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "cycles/s")
}

// BenchmarkEtcdCycles: acquire+release through the etcd backend (the
// harness's path: TryLock over our own lease, conditional release), 8
// clients, one key each, no faults.
func BenchmarkEtcdCycles(b *testing.B) {
	cl, _ := etcdBenchCluster(b)
	ctx := context.Background()
	keys := make([]string, etcdBenchClients)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	_, factory, err := Lookup("etcd")
	if err != nil {
		b.Fatal(err)
	}
	be, err := factory(ctx, Env{Cluster: cl, TTL: 10 * time.Second, OpTimeout: 2 * time.Second, Clients: etcdBenchClients, Keys: keys})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	clients := make([]Client, etcdBenchClients)
	for p := range clients {
		c, err := be.Client(ctx, ClientEnv{Process: p, Gate: cluster.NewGate(), Clock: cluster.NewClock()})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		clients[p] = c
	}
	runCycles(b, func(p int) error {
		g, err := clients[p].Acquire(ctx, keys[p])
		if err != nil {
			return fmt.Errorf("acquire: %w", err)
		}
		if err := clients[p].Release(ctx, keys[p], g); err != nil {
			return fmt.Errorf("release: %w", err)
		}
		return nil
	})
}

// BenchmarkEtcdBareCycles: the same cycles written directly against
// client/v3 as its docs show (a session with the library's own keepalive,
// Mutex.TryLock and Mutex.Unlock), for the harness's overhead as a ratio.
func BenchmarkEtcdBareCycles(b *testing.B) {
	_, e := etcdBenchCluster(b)
	ctx := context.Background()
	mus := make([]*concurrency.Mutex, etcdBenchClients)
	for p := range mus {
		cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			b.Fatal(err)
		}
		defer cli.Close()
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		mus[p] = concurrency.NewMutex(s, fmt.Sprintf("bare/k%d", p))
	}
	runCycles(b, func(p int) error {
		if err := mus[p].TryLock(ctx); err != nil {
			return fmt.Errorf("trylock: %w", err)
		}
		return mus[p].Unlock(ctx)
	})
}
