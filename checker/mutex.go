package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/locktorture/locktorture/history"
)

// Mutex checks mutual exclusion: it reports every pair of holds of one key by
// different processes that overlap in time. It sorts the holds and sweeps
// them, so it costs O(n log n + violations).
//
// Holds touch but do not overlap when the later acquire ok comes at the very
// nanosecond of the earlier release invoke: a hand-off is not a violation.
// Two holds conflict when each began before the other ended, an open hold
// (still held when the history ended) never ending; so an overlap of length
// zero is still reported in two degenerate cases that no lock may allow: a
// hold that began and ended at one instant strictly inside another, and two
// holds both still open at the history's end. This is exactly the question
// the linearizable checker's model answers, so the two always agree.
//
// An overlap is a stale holder when the earlier holder's lease had run out
// by its own reckoning before the later acquire, and a double grant
// otherwise.
func Mutex(ops []history.Op) *MutexResult {
	return mutex(ops, func() []Hold { return Holds(ops) })
}

// mutex is Mutex with the history's holds (Holds(ops)) made by hs.
func mutex(ops []history.Op, hs func() []Hold) *MutexResult {
	holds := hs()
	res := &MutexResult{Valid: Valid, Holds: len(holds), Violations: []Overlap{}}
	res.RolledBack = rolledBackHolds(ops, resolveTx(ops))
	end := func(h *Hold) int64 {
		if h.Open {
			return math.MaxInt64
		}
		return h.End
	}
	var pairs [][2]int // every conflict, as (earlier, later) indexes into holds
	var active []int   // earlier holds of the current key that may still overlap
	for i := range holds {
		h := &holds[i]
		if i == 0 || holds[i-1].Key != h.Key {
			active = active[:0]
		}
		// Drop holds that ended at or before this one started.
		keep := active[:0]
		for _, j := range active {
			if end(&holds[j]) > h.Start {
				keep = append(keep, j)
			}
		}
		active = keep
		for _, j := range active {
			a := &holds[j]
			if a.Process == h.Process || end(h) <= a.Start {
				continue
			}
			res.Count++
			if staleAt(a, h.Start) || staleAt(h, h.Start) {
				res.StaleHolders++
			} else {
				res.DoubleGrants++
			}
			pairs = append(pairs, [2]int{j, i})
		}
		active = append(active, i)
	}
	// Holds are sorted by key first; list the earliest violations.
	slices.SortStableFunc(pairs, func(x, y [2]int) int {
		return cmp.Compare(holds[x[1]].Start, holds[y[1]].Start)
	})
	for _, p := range pairs[:min(len(pairs), maxListed)] {
		res.Violations = append(res.Violations, overlap(&holds[p[0]], &holds[p[1]]))
	}
	if res.Count > 0 {
		res.Valid = Invalid
	}
	return res
}

// staleAt reports whether hold h's lease, as it stood at time t, had run out
// by then (a hold without a lease never runs out).
func staleAt(h *Hold, t int64) bool {
	l, ok := h.leaseAt(t)
	return ok && l.end <= t
}

// asAt returns a copy of h whose lease is the one it had at time t.
func asAt(h *Hold, t int64) *Hold {
	c := *h
	c.LeaseEnd, c.leases = nil, nil
	if l, ok := h.leaseAt(t); ok {
		c.LeaseEnd, c.LeaseMS = history.Int64(l.end), history.Int64(l.ms)
	}
	return &c
}

// overlap describes the conflict between an earlier hold a and a later hold h,
// each judged by its lease as it stood when h began.
func overlap(a, h *Hold) Overlap {
	a, h = asAt(a, h.Start), asAt(h, h.Start)
	o := Overlap{
		Key:     h.Key,
		Earlier: *a,
		Later:   *h,
		Start:   h.Start,
		Length:  min(a.End, h.End) - h.Start,
	}
	held := "until " + secs(a.End)
	if a.Open {
		held = "to the end of the history"
	}
	var why string
	switch {
	case staleAt(a, h.Start):
		o.Kind = StaleHolder
		why = fmt.Sprintf("stale holder, its %s lease had run out at %s", leaseOf(a), secs(*a.LeaseEnd))
	case staleAt(h, h.Start):
		// The later holder heard of its grant only after its lease had
		// run out (a delayed reply): it is the stale one.
		o.Kind = StaleHolder
		why = fmt.Sprintf("stale holder, process %d's %s lease had already run out at %s when it heard it had the lock", h.Process, leaseOf(h), secs(*h.LeaseEnd))
	case a.LeaseEnd != nil:
		o.Kind = DoubleGrant
		why = fmt.Sprintf("double grant, process %d's %s lease was still valid until %s", a.Process, leaseOf(a), secs(*a.LeaseEnd))
	default:
		o.Kind = DoubleGrant
		why = fmt.Sprintf("double grant, process %d's hold had no lease", a.Process)
	}
	o.Description = fmt.Sprintf("process %d held %s%s %s, but process %d acquired %s%s at %s: %s of overlap — %s",
		a.Process, a.Key, grantSuffix(a), held,
		h.Process, h.Key, grantSuffix(h), secs(h.Start),
		length(o.Length), why)
	return o
}

// leaseOf names a hold's lease length.
func leaseOf(h *Hold) string {
	if h.LeaseMS == nil {
		return "extended"
	}
	return leaseString(*h.LeaseMS)
}
