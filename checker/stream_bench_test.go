package checker

import (
	"context"
	"fmt"
	"runtime"
	"testing"

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
