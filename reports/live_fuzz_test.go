package reports

import (
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// plainLive is Live as it was before it took its lock only for the ops
// that start, renew or end a hold: every op counted and told to the
// Tracker under the lock. FuzzLiveMatchesPlain holds Live to it.
type plainLive struct {
	mu      sync.Mutex
	ops     int
	firstOp time.Time
	holds   checker.Tracker
}

func (l *plainLive) Observe(op *history.Op) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops++
	if op.IsNemesis() {
		return
	}
	if l.firstOp.IsZero() {
		l.firstOp = time.Now()
	}
	l.holds.Observe(op)
}

// FuzzLiveMatchesPlain tells a Live and a plainLive the same ops, one per
// two bytes of the input (process, type, f, key, lease, from the bits),
// and holds them to the same counts after each: ops, holds, overlaps,
// stale holders, and whether the clients' clock has started.
func FuzzLiveMatchesPlain(f *testing.F) {
	for _, seed := range []string{"", "\x00\x00", "\x08\x00\x10\x00\x09\x01", "\x07\x00\x08\x02\x18\x00\x1a\x05\x0f\x07"} {
		f.Add([]byte(seed))
	}
	fs := []string{history.Acquire, history.Release, history.Extend, history.Read, history.Write, history.FinalRead, history.Lost, "start-pause"}
	types := []history.Type{history.Invoke, history.OK, history.Fail, history.Info}
	f.Fuzz(func(t *testing.T, in []byte) {
		var l, fromRecorder Live
		// As the runner has it: the ops counted by the recorder.
		var recorded int64
		fromRecorder.OpsFrom(func() int64 { return recorded })
		var p plainLive
		for i := 0; i+1 < len(in); i += 2 {
			a, b := in[i], in[i+1]
			op := history.Op{
				Index:   int64(i / 2),
				Time:    int64(i) * 1e6,
				Process: int(a&3) - 1, // -1 is the nemesis
				Type:    types[a>>2&3],
				F:       fs[a>>4&7],
				Key:     []string{"k0", "k1"}[b&1],
			}
			if b&2 != 0 {
				op.LeaseMS = history.Int64(int64(b>>2) - 8)
			}
			l.Observe(&op)
			recorded++
			fromRecorder.Observe(&op)
			p.Observe(&op)
			holds, overlaps, stale := p.holds.Totals()
			for _, l := range []*Live{&l, &fromRecorder} {
				got := l.Counts(time.Now())
				started := !l.firstOp.IsZero()
				if got.Ops != p.ops || got.Holds != holds || got.Overlaps != overlaps || got.Stale != stale || started != !p.firstOp.IsZero() {
					t.Fatalf("after op %d %+v: %+v, plain ops %d holds %d overlaps %d stale %d started %v", i/2, op, got, p.ops, holds, overlaps, stale, !p.firstOp.IsZero())
				}
			}
		}
	})
}
