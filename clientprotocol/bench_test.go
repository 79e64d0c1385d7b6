package clientprotocol

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/workload"
)

// BenchmarkProcessVsInproc measures what running clients as processes
// costs a lock: redis-token on one redis-server, 8 clients on 8 keys,
// hold and think 1ns, the memory resource, in alternating rounds of
// benchRound — in-process clients, then one `locktorture client` (this
// test binary) per client. It reports holds/s of each, their ratio
// (process/inproc), and start-ms: how long 8 children took to start and
// answer open.
func BenchmarkProcessVsInproc(b *testing.B) {
	testenv.Require(b, "redis-server")
	const clients, rounds, benchRound = 8, 4, time.Second
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cl, err := cluster.New(cluster.Options{TempDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	_, factory, _ := backends.Lookup("redis-token")
	keys := make([]string, clients)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	ctx := context.Background()
	timeout := 2 * time.Second
	backend, err := factory(ctx, backends.Env{Cluster: cl, TTL: 10 * time.Second, OpTimeout: timeout, Clients: clients, Keys: keys, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer backend.Close()
	cfg := workload.Config{Clients: clients, Keys: keys, Hold: time.Nanosecond, ThinkMin: time.Nanosecond, ThinkMax: time.Nanosecond, OpTimeout: timeout, Seed: 1}
	round := func(process bool) (holds int64, took, start time.Duration) {
		var nh atomic.Int64
		rec := history.NewRecorder(nil, history.RecorderOptions{Observe: func(op history.Op) {
			if op.F == history.Acquire && op.Type == history.OK {
				nh.Add(1)
			}
		}})
		defer rec.Close()
		procs := workload.NewProcs(clients, rec)
		var be backends.Backend = backend
		if process {
			t0 := time.Now()
			l := New(Options{Command: []string{self, "client"}, Cluster: cl, Dir: b.TempDir(), TTL: 10 * time.Second, Timeout: timeout,
				Builtin: &ChildConfig{Backend: "redis-token", Env: backends.Env{Clients: clients, Keys: keys, Seed: 1}}})
			defer l.Close()
			if err := l.Start(ctx, Procs{Gates: procs.Gates, Clocks: procs.Clocks, History: procs.History}); err != nil {
				b.Fatal(err)
			}
			start, be = time.Since(t0), l
		}
		res, _ := workload.NewMemory(workload.FenceNone)
		stop := make(chan struct{})
		t0 := time.Now()
		t := time.AfterFunc(benchRound, func() { close(stop) })
		defer t.Stop()
		if err := workload.Run(ctx, stop, cfg, be, res, procs); err != nil {
			b.Fatal(err)
		}
		return nh.Load(), time.Since(t0), start
	}
	var inN, prN int64
	var inT, prT, startT time.Duration
	starts := 0
	b.ResetTimer()
	for range b.N {
		for r := range rounds {
			h, d, _ := round(false)
			inN, inT = inN+h, inT+d
			h2, d2, s := round(true)
			prN, prT, startT, starts = prN+h2, prT+d2, startT+s, starts+1
			b.Logf("round %d: inproc %.0f holds/s, process %.0f holds/s, start %s", r, float64(h)/d.Seconds(), float64(h2)/d2.Seconds(), s.Round(time.Millisecond))
		}
	}
	b.StopTimer()
	in, pr := float64(inN)/inT.Seconds(), float64(prN)/prT.Seconds()
	b.ReportMetric(in, "inproc-holds/s")
	b.ReportMetric(pr, "process-holds/s")
	b.ReportMetric(pr/in, "process/inproc")
	b.ReportMetric(float64(startT.Milliseconds())/float64(starts), "start-ms")
}
