package backends

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktorture/locktorture/clientfault"
	"github.com/locktorture/locktorture/cluster"
	rediskind "github.com/locktorture/locktorture/cluster/kinds/redis"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/leakcheck"
)

// benchClients is the number of concurrent clients, each on its own key.
const benchClients = 8

// BenchmarkCycles measures lock cycles per second — one acquire and one
// release, no faults — with 8 clients on a key each, for every registered
// backend (through its Client, as the workload drives it, without the
// workload's history and resource) and for a bare go-redis loop doing SET
// NX PX and the release script on one server. Run it as
//
//	go test -run '^$' -bench Cycles -benchtime 2s -v ./backends/
//
// and read cycles/s; the closing log line gives each backend's ratio to
// the bare loop, measured in the same run. Backends whose servers are not
// installed are skipped.
func BenchmarkCycles(b *testing.B) {
	tmp := b.TempDir()
	rates := map[string]float64{}
	b.Run("bare-go-redis", func(b *testing.B) {
		rates["bare-go-redis"] = benchBare(b, tmp)
	})
	for _, name := range Names() {
		var st *benchState
		b.Run(name, func(b *testing.B) {
			if name == "exec" {
				b.Skip("exec runs a program of the user's: it has no client in this process (BenchmarkProcessVsInproc measures process clients)")
			}
			if st == nil {
				var err error
				if st, err = newBenchState(name, tmp); err != nil {
					if errors.Is(err, cluster.ErrMissingBinary) {
						b.Skip(err)
					}
					b.Fatal(err)
				}
			}
			rates[name] = st.run(b)
		})
		if st != nil {
			if err := st.close(); err != nil {
				b.Errorf("%s: %v", name, err)
			}
		}
	}
	if left := leakcheck.ProcessesUnder(tmp); len(left) > 0 {
		b.Errorf("servers left running: %v", left)
	}
	if bare := rates["bare-go-redis"]; bare > 0 {
		names := make([]string, 0, len(rates))
		for n := range rates {
			names = append(names, n)
		}
		sort.Strings(names)
		var sb strings.Builder
		for _, n := range names {
			fmt.Fprintf(&sb, "\n  %-20s %9.0f cycles/s  %5.2fx bare", n, rates[n], rates[n]/bare)
		}
		b.Logf("lock cycles per second, %d clients, a key each:%s", benchClients, sb.String())
	}
}

// benchState is one backend, its servers and its 8 clients, set up once
// for all of a sub-benchmark's rounds.
type benchState struct {
	cl      *cluster.Cluster
	backend Backend
	clients []Client
	keys    []string
	timeout time.Duration
	rec     *history.Recorder
	cancel  context.CancelFunc
}

func newBenchState(name, tmp string) (st *benchState, err error) {
	_, factory, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	cl, err := cluster.New(cluster.Options{TempDir: tmp})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	st = &benchState{cl: cl, timeout: 2 * time.Second, cancel: cancel,
		rec: history.NewRecorder(io.Discard, history.RecorderOptions{})}
	defer func() {
		if err != nil {
			_ = st.close()
		}
	}()
	for i := range benchClients {
		st.keys = append(st.keys, fmt.Sprintf("bench%d", i))
	}
	env := Env{Cluster: cl, TTL: 10 * time.Second, OpTimeout: st.timeout, Clients: benchClients, Keys: st.keys, Seed: 1}
	if st.backend, err = factory(ctx, env); err != nil {
		return st, err
	}
	for p := range benchClients {
		c, err := st.backend.Client(ctx, ClientEnv{Process: p, Gate: clientfault.NewGate(), Clock: clientfault.NewClock(), History: st.rec.Proc(p)})
		if err != nil {
			return st, err
		}
		st.clients = append(st.clients, c)
	}
	return st, nil
}

func (st *benchState) close() error {
	var errs []error
	for _, c := range st.clients {
		errs = append(errs, c.Close())
	}
	if st.backend != nil {
		errs = append(errs, st.backend.Close())
	}
	st.cancel()
	errs = append(errs, st.rec.Close(), st.cl.Close())
	return errors.Join(errs...)
}

// run does b.N cycles spread over the clients and reports cycles/s.
func (st *benchState) run(b *testing.B) float64 {
	return parallelCycles(b, func(p int) error {
		ctx, cancel := context.WithTimeout(context.Background(), st.timeout)
		defer cancel()
		g, err := st.clients[p].Acquire(ctx, st.keys[p])
		if err != nil {
			return fmt.Errorf("acquire: %w", err)
		}
		if err := st.clients[p].Release(ctx, st.keys[p], g); err != nil {
			return fmt.Errorf("release: %w", err)
		}
		return nil
	})
}

// benchBare is the comparator: go-redis as a user would write the
// redis-token lock by hand, default client options, one server.
func benchBare(b *testing.B, tmp string) float64 {
	if _, err := exec.LookPath("redis-server"); err != nil {
		b.Skip("redis-server not installed (make deps)")
	}
	cl, err := cluster.New(cluster.Options{TempDir: tmp})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	srv, err := rediskind.Start(context.Background(), cl, rediskind.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rcs := make([]*redis.Client, benchClients)
	tokens := make([]string, benchClients)
	for p := range rcs {
		rcs[p] = redis.NewClient(&redis.Options{Addr: srv.Addr()})
		defer rcs[p].Close()
		tokens[p] = randomToken()
	}
	ctx := context.Background()
	return parallelCycles(b, func(p int) error {
		key := fmt.Sprintf("%sbench%d", redisLockPrefix, p)
		ok, err := rcs[p].SetNX(ctx, key, tokens[p], 10*time.Second).Result()
		if err != nil || !ok {
			return fmt.Errorf("acquire: %v %w", ok, err)
		}
		n, err := releaseScript.Run(ctx, rcs[p], []string{key}, tokens[p]).Int()
		if err != nil || n != 1 {
			return fmt.Errorf("release: %d %w", n, err)
		}
		return nil
	})
}

// parallelCycles runs b.N cycles over benchClients goroutines (client p
// runs cycle(p) its share of times), reports cycles/s and returns it.
// More than 1% of cycles failing fails the benchmark.
func parallelCycles(b *testing.B, cycle func(p int) error) float64 {
	var failed atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for p := range benchClients {
		n := b.N / benchClients
		if p < b.N%benchClients {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if err := cycle(p); err != nil {
					if failed.Add(1) == 1 {
						mu.Lock()
						firstErr = err
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "cycles/s")
	if f := failed.Load(); f > 0 {
		b.ReportMetric(float64(f), "failed")
		if f*100 > int64(b.N) {
			mu.Lock()
			defer mu.Unlock()
			b.Errorf("%d of %d cycles failed; first: %v", f, b.N, firstErr)
		}
	}
	return rate
}
