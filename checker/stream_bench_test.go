package checker

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/histgen"
)

// BenchmarkStream runs each checker alone as a Stream over a healthy
// history of 1,000,000 and of 10,000,000 ops (8 clients, 16 keys; see
// histgen.Realistic), made as it is fed so that no slice of it is held:
// ops/s, bytes allocated per op of the history (B/history-op), and the peak live heap (sampled every
// 262,144 ops), which must not grow with the history. "generate" is the
// generator alone, to subtract.
func BenchmarkStream(b *testing.B) {
	for _, n := range []int{1_000_000, 10_000_000} {
		for _, name := range append([]string{"generate"}, All...) {
			b.Run(fmt.Sprintf("%s/%dM", name, n/1_000_000), func(b *testing.B) {
				var peak uint64
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for range b.N {
					var s *Stream
					if name != "generate" {
						s, _ = NewStream(context.Background(), []string{name}, Options{})
					}
					i := 0
					histgen.Each(1, 8, 16, n, func(op *history.Op) {
						if s != nil {
							s.Add(op)
						}
						if i++; i&(1<<18-1) == 0 {
							var m runtime.MemStats
							runtime.ReadMemStats(&m)
							peak = max(peak, m.HeapAlloc)
						}
					})
					if s == nil {
						continue
					}
					c, err := s.Result(nil)
					if err != nil {
						b.Fatal(err)
					}
					if v := c.Verdict(); v != Valid {
						b.Fatalf("%s: %v on a healthy history", name, v)
					}
				}
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "ops/s")
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(n*b.N), "B/history-op")
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			})
		}
	}
}

// TestHoldsAllocationFitsTheHolds: Holds takes room for the holds it
// finds, not blocks made for a million-op history: a Stream checks a
// key's segment of a few hundred holds a thousand times in such a history.
func TestHoldsAllocationFitsTheHolds(t *testing.T) {
	for _, n := range []int{1, 10, 300, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			b := newHistory()
			for i := range n {
				b.hold(i%3, "k", float64(2*i)+0.5, float64(2*i)+1, fence(int64(i+1)), lease(1000))
			}
			ops := b.build()
			per := int(unsafe.Sizeof(Hold{})) + 3*8 + int(unsafe.Sizeof(leaseSpan{}))
			allocs := testing.AllocsPerRun(5, func() { Holds(ops) })
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			hs := Holds(ops)
			runtime.ReadMemStats(&after)
			if len(hs) != n {
				t.Fatalf("%d holds, want %d", len(hs), n)
			}
			if got, want := after.TotalAlloc-before.TotalAlloc, uint64(2*n*per+4096); got > want {
				t.Errorf("%d holds (%d bytes each with their values) allocated %d bytes (%.0f allocations), want at most %d", n, per, got, allocs, want)
			}
		})
	}
}

// TestSegmentRoom: a key's segment makes room for minSegment ops in a few
// steps, not a quarter at a time (a copy of the segment each), and the
// room is kept from one segment to the next.
func TestSegmentRoom(t *testing.T) {
	ops := realisticHistory(3, 4, 1, 30000)
	s, err := NewStream(context.Background(), []string{NameMutex}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var caps []int
	for i := range ops {
		s.Add(&ops[i])
		for _, g := range s.keys {
			if c := cap(g.ops); len(caps) == 0 || caps[len(caps)-1] != c {
				caps = append(caps, c)
			}
		}
	}
	if len(caps) > 12 || caps[len(caps)-1] < minSegment {
		t.Fatalf("the segment's room grew %d times: %v", len(caps)-1, caps)
	}
}

// TestStreamSegmentsMemory: the segments of the 16 busy keys of a history
// like the million-op benchmark's (128 clients) hold at most 8 MB of ops
// at any time: each key is checked every minSegment ops or so, and with
// 4096 they held 11 MB, which the GC's goal doubled in analyze's peak.
func TestStreamSegmentsMemory(t *testing.T) {
	ops := realisticHistory(1, 128, 16, 300000)
	s, err := NewStream(context.Background(), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	size := int(unsafe.Sizeof(history.Op{}) + unsafe.Sizeof(int64(0)))
	most := 0
	for i := range ops {
		s.Add(&ops[i])
		if i%1000 == 0 {
			held := 0
			for _, g := range s.keys {
				held += cap(g.ops) * size
			}
			most = max(most, held)
		}
	}
	if most > 8<<20 {
		t.Errorf("the segments held %.1f MB", float64(most)/(1<<20))
	}
}
