package backends

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/kinds/etcd"
	"github.com/locktorture/locktorture/internal/leakcheck"
)

// BenchmarkEtcdBareCycles is the etcd backend's own comparator: the cycles
// of BenchmarkCycles/etcd (8 clients, a key each, acquire+release, no
// faults) written directly against client/v3 as its docs show — a session
// with the library's own keepalive, Mutex.TryLock and Mutex.Unlock — so the
// harness's overhead on etcd is a ratio of two numbers from one run:
//
//	go test -run '^$' -bench 'Cycles/^(etcd|bare-etcd)$' -benchtime 3s -count 3 ./backends/
func BenchmarkEtcdBareCycles(b *testing.B) {
	b.Run("bare-etcd", benchBareEtcd)
}

func benchBareEtcd(b *testing.B) {
	if _, err := exec.LookPath("etcd"); err != nil {
		b.Skip("etcd not installed (make deps: Debian package etcd-server)")
	}
	tmp := b.TempDir()
	cl, err := cluster.New(cluster.Options{TempDir: tmp})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := cl.Close(); err != nil {
			b.Errorf("cluster close: %v", err)
		}
		if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
			b.Errorf("servers left running: %v", left)
		}
	}()
	ctx := context.Background()
	e, err := etcd.Start(ctx, cl, etcd.Options{})
	if err != nil {
		b.Fatal(err)
	}
	mus := make([]*concurrency.Mutex, benchClients)
	for p := range mus {
		cfg, err := e.ClientConfig(e.Endpoints(), 2*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		cli, err := clientv3.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer cli.Close()
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		mus[p] = concurrency.NewMutex(s, fmt.Sprintf("bare/bench%d", p))
	}
	parallelCycles(b, func(p int) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := mus[p].TryLock(ctx); err != nil {
			return fmt.Errorf("trylock: %w", err)
		}
		return mus[p].Unlock(ctx)
	})
}
