package reports

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/procmem"
)

// Live is a run's verdict so far, for a progress line and for the line
// run.log gets every minute: ops recorded, holds, overlapping holds and
// stale holders seen live (checker.Tracker), and the harness's memory.
// Observe may be called from the recording goroutine while Line is called
// from another. The zero Live is ready to use.
type Live struct {
	// ops is counted without the lock, and the lock is taken only for
	// the ops that start, renew or end a hold: every client's every op
	// passes through Observe, on the client's own goroutine.
	ops atomic.Int64
	// recorded, when set (OpsFrom), counts the ops instead: the
	// recorder's own count, read once a line, not an add to a counter
	// every client shares for every op.
	recorded func() int64
	started  atomic.Bool // firstOp is set
	mu       sync.Mutex
	firstOp  time.Time // the first client op: the clients' clock starts
	holds    checker.Tracker
}

// OpsFrom makes recorded (a history.Recorder's Len) the count of ops, so
// that Observe need not count them. Call it before the first Observe.
func (l *Live) OpsFrom(recorded func() int64) { l.recorded = recorded }

// Observe counts one recorded op.
func (l *Live) Observe(op *history.Op) {
	if l.recorded == nil {
		l.ops.Add(1)
	}
	if op.IsNemesis() {
		return
	}
	if !l.started.Load() {
		l.mu.Lock()
		if l.firstOp.IsZero() {
			l.firstOp = time.Now()
		}
		l.started.Store(true)
		l.mu.Unlock()
	}
	if !holdOp(op.F) {
		return
	}
	l.mu.Lock()
	l.holds.Observe(op)
	l.mu.Unlock()
}

// holdOp reports whether an op f may start, renew or end a hold, by
// checker.Tracker's rule (an acquire's ok, an extend's ok, a release's or
// a lost's invoke): a read, a write or a final read never does, and the
// Tracker need not see it.
func holdOp(f string) bool {
	switch f {
	case history.Acquire, history.Extend, history.Release, history.Lost:
		return true
	}
	return false
}

// LiveCounts is what a Live has counted.
type LiveCounts struct {
	Ops, Holds, Overlaps, Stale int
	// Elapsed is the time since the first client op (zero before it).
	Elapsed time.Duration
}

// Counts returns what l has counted so far.
func (l *Live) Counts(now time.Time) LiveCounts {
	c := LiveCounts{Ops: int(l.ops.Load())}
	if l.recorded != nil {
		// Outside l.mu: the recorder takes its own lock.
		c.Ops = int(l.recorded())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c.Holds, c.Overlaps, c.Stale = l.holds.Totals()
	if !l.firstOp.IsZero() {
		c.Elapsed = now.Sub(l.firstOp)
	}
	return c
}

// Line says it in one line: "1m0s of 10m0s, 3,210,000 ops (53,500/s),
// 240,000 holds, 0 overlaps, 0 stale holders, RSS 45 MB". With overlaps
// false (a lock-free backend, whose holds overlap by design) the overlaps
// and stale holders are left out.
func (c LiveCounts) Line(planned time.Duration, overlaps bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s of %s, %s ops", roundDur(c.Elapsed), roundDur(planned), thousands(c.Ops))
	if c.Elapsed > 0 {
		fmt.Fprintf(&b, " (%s/s)", thousands(int(float64(c.Ops)/c.Elapsed.Seconds())))
	}
	fmt.Fprintf(&b, ", %s", count(c.Holds, "hold", "holds"))
	if overlaps {
		fmt.Fprintf(&b, ", %s, %s", count(c.Overlaps, "overlap", "overlaps"), count(c.Stale, "stale holder", "stale holders"))
	}
	fmt.Fprintf(&b, ", RSS %d MB", procmem.RSS()>>20)
	return b.String()
}

// short is Line for a terminal's bar: "1m0s/10m0s · 3,210,000 ops ·
// 53,500/s · 240,000 holds · 0 overlaps · 0 stale · 45 MB".
func (c LiveCounts) short(planned time.Duration, overlaps bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s · %s ops", roundDur(c.Elapsed), roundDur(planned), thousands(c.Ops))
	if c.Elapsed > 0 {
		fmt.Fprintf(&b, " · %s/s", thousands(int(float64(c.Ops)/c.Elapsed.Seconds())))
	}
	fmt.Fprintf(&b, " · %s", count(c.Holds, "hold", "holds"))
	if overlaps {
		fmt.Fprintf(&b, " · %s · %s stale", count(c.Overlaps, "overlap", "overlaps"), thousands(c.Stale))
	}
	fmt.Fprintf(&b, " · %d MB", procmem.RSS()>>20)
	return b.String()
}

// count is n (with thousands separators) and the word for it.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return thousands(n) + " " + many
}
