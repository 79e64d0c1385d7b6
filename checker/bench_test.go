package checker

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/histgen"
)

// realisticHistory is histgen.Realistic (see there).
func realisticHistory(seed uint64, procs, keys, n int) []history.Op {
	return histgen.Realistic(seed, procs, keys, n)
}

var (
	benchOnce sync.Once
	benchOps  []history.Op
)

// benchHistory is the shared 1,000,000-op history: 8 clients, 16 keys.
func benchHistory(b *testing.B) []history.Op {
	benchOnce.Do(func() { benchOps = realisticHistory(1, 8, 16, 1000000) })
	return benchOps
}

func TestRealisticHistory(t *testing.T) {
	ops := realisticHistory(2, 8, 16, 20000)
	if err := history.Validate(context.Background(), ops); err != nil {
		t.Fatal(err)
	}
	c, err := Check(context.Background(), ops, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Verdict() != Valid {
		t.Fatalf("a healthy run is %v: %+v", c.Verdicts(), c)
	}
	if c.Mutex.Holds < 1000 || c.LostUpdate.AcceptedWrites < 1000 || c.LostUpdate.FinalReads != 16 || c.Stats.Ops[history.Acquire]["fail"] == 0 {
		t.Fatalf("not a busy run: %d holds, %+v", c.Mutex.Holds, c.Stats.Ops)
	}
}

func benchmark(b *testing.B, check func([]history.Op) Validity) {
	ops := benchHistory(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if v := check(ops); v != Valid {
			b.Fatalf("verdict %v on a healthy history", v)
		}
	}
	b.ReportMetric(float64(len(ops)*b.N)/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkMutex(b *testing.B) {
	benchmark(b, func(ops []history.Op) Validity { return Mutex(ops).Valid })
}

func BenchmarkLinearizable(b *testing.B) {
	benchmark(b, func(ops []history.Op) Validity { return checkLinearizable(context.Background(), ops, 0).Valid })
}

func BenchmarkFencing(b *testing.B) {
	benchmark(b, func(ops []history.Op) Validity { return checkFencing(ops).Valid })
}

func BenchmarkLostUpdate(b *testing.B) {
	benchmark(b, func(ops []history.Op) Validity { return checkLostUpdate(ops).Valid })
}

func BenchmarkStats(b *testing.B) {
	benchmark(b, func(ops []history.Op) Validity { return statsOf(ops).Valid })
}

// TestLongHistory checks a long healthy history, then the same with one
// release dropped in the middle: both mutex checkers must find the key.
func TestLongHistory(t *testing.T) {
	ops := realisticHistory(3, 8, 16, 200000)
	if m, l := Mutex(ops), checkLinearizable(context.Background(), ops, 0); m.Valid != Valid || l.Valid != Valid {
		t.Fatalf("healthy: mutex %v, linearizable %+v", m.Valid, l)
	}
	var bad []history.Op
	dropped, skip := "", -1
	for i, o := range ops {
		if dropped == "" && i > len(ops)/2 && o.F == history.Release && o.Type == history.Invoke {
			dropped = o.Key
			for skip = i + 1; ops[skip].Process != o.Process; skip++ { // its completion
			}
			continue
		}
		if i == skip {
			continue
		}
		o.Index = int64(len(bad))
		bad = append(bad, o)
	}
	if err := history.Validate(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	m, l := Mutex(bad), checkLinearizable(context.Background(), bad, 0)
	if m.Valid != Invalid || l.Valid != Invalid || len(l.BadKeys) != 1 || l.BadKeys[0] != dropped || m.Violations[0].Key != dropped {
		t.Fatalf("release of %s dropped: mutex %v %v, linearizable %+v", dropped, m.Valid, m.Violations[:1], l)
	}
	var buf bytes.Buffer
	if err := LinearizableVisualization(bad, &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "acquire "+dropped+" ") || buf.Len() > 20<<20 {
		t.Fatalf("visualization of %d bytes", buf.Len())
	}
}

func BenchmarkLinearizableVisualization(b *testing.B) {
	ops := benchHistory(b)
	b.ResetTimer()
	var n int
	for range b.N {
		var buf bytes.Buffer
		if err := LinearizableVisualization(ops, &buf); err != nil {
			b.Fatal(err)
		}
		n = buf.Len()
	}
	b.ReportMetric(float64(len(ops)*b.N)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64(n), "html-bytes")
}
