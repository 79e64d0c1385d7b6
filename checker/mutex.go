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
// them, counting the overlaps each hold starts from running totals of the
// holds in progress (how many, and how many of them stale), so it costs
// O(n log n) in the holds and their lease extensions however many overlap
// at once; only the first maxListed overlaps of each key are made.
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
	resolved := resolveTx(ops)
	return mutexOf(ops, resolved, func() []Hold { return holdsOf(resolved) })
}

// mutex is Mutex with the history's holds (Holds(ops)) made by hs.
func mutex(ops []history.Op, hs func() []Hold) *MutexResult {
	return mutexOf(ops, resolveTx(ops), hs)
}

// mutexOf is mutex with ops judged by resolveTx already (resolved).
func mutexOf(ops, resolved []history.Op, hs func() []Hold) *MutexResult {
	holds := hs()
	res := &MutexResult{Valid: Valid, Holds: len(holds), Violations: []Overlap{}}
	res.RolledBack = rolledBackHolds(ops, resolved)
	var pairs [][2]int // the first maxListed conflicts of each key, as (earlier, later) indexes into holds
	var sw sweep
	for from := 0; from < len(holds); {
		to := from + 1
		for to < len(holds) && holds[to].Key == holds[from].Key {
			to++
		}
		pairs = sw.key(holds[from:to], from, res, pairs)
		from = to
	}
	// Holds are sorted by key first; list the earliest violations. Each
	// key's first maxListed hold all of the first maxListed overall.
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

// never is a time no sweep reaches: when an open hold ends, or a lease
// that will not change does.
const never = math.MaxInt64

// holdEnd is when h ended, never for an open hold.
func holdEnd(h *Hold) int64 {
	if h.Open {
		return never
	}
	return h.End
}

// sweep goes through one key's holds in order of their start. A hold is
// in progress from its start until a later hold starts at or after its
// end; each hold conflicts with every hold in progress by another process
// that began before it ended. The sweep keeps how many holds are in
// progress and how many of them are stale (their lease, as it stands at
// the current time, has run out), in all and by process, so it counts a
// hold's conflicts without visiting them: a heap of the holds by end says
// which leave, a heap by the next time their lease may change (an
// extension, or the lease running out) says whose staleness to look at
// again. Its buffers are kept from one key to the next.
type sweep struct {
	st     []sweepHold
	ends   timeHeap // holds in progress by end (open ones never leave)
	leases timeHeap // holds in progress by the next time their staleness may change
	procs  procTable[procCount]
	total  procCount
	// listing holds the holds in progress in order, while the key lists
	// its conflicts (some may have left since: they are dropped as met).
	listing []int32
}

// procCount counts holds in progress, and the stale ones among them.
type procCount struct{ n, stale int }

// sweepHold is where a hold of the key stands in the sweep.
type sweepHold struct {
	next          int64 // when its staleness may change next (never: it will not)
	span          int32 // its lease's grant or extension as of now, -1 none (ordered leases)
	active, stale bool
	ordered       bool // its leases are in time order, as a history whose time only goes forward makes them
}

// key counts the conflicts of one key's holds g (sorted by start), whose
// first is holds[base], into res, and appends the first maxListed of
// them to pairs, in the order the plain sweep finds them: by the later
// hold, then by the earlier.
func (s *sweep) key(g []Hold, base int, res *MutexResult, pairs [][2]int) [][2]int {
	s.reset(len(g))
	listed, listing := 0, true
	for i := range g {
		h := &g[i]
		t := h.Start
		for len(s.ends) > 0 && s.ends[0].at <= t {
			s.leave(g, int(s.ends.pop().i))
		}
		for len(s.leases) > 0 && s.leases[0].at <= t {
			j := int(s.leases.pop().i)
			if s.st[j].active {
				s.restale(g, j, t)
			}
		}
		// Conflicts: the holds in progress, but h's own process's and,
		// when h ended by the time it began (a hold of one instant), those
		// that began at or after its end.
		mine := *s.procs.at(h.Process)
		n, stale := s.total.n-mine.n, s.total.stale-mine.stale
		if e := holdEnd(h); e <= t {
			for j := i - 1; j >= 0 && g[j].Start >= e; j-- {
				if s.st[j].active && g[j].Process != h.Process {
					n--
					if s.st[j].stale {
						stale--
					}
				}
			}
		}
		if staleAt(h, t) {
			// The later holder heard of its grant after its lease had run
			// out: every conflict it starts is a stale holder.
			stale = n
		}
		res.Count += n
		res.StaleHolders += stale
		res.DoubleGrants += n - stale
		if listing && n > 0 {
			pairs, listed = s.list(g, i, base, pairs, listed)
			listing = listed < maxListed
			if !listing {
				s.listing = s.listing[:0]
			}
		} else if listing && len(s.listing) > 2*s.total.n+16 {
			s.listing = slices.DeleteFunc(s.listing, func(j int32) bool { return !s.st[j].active })
		}
		s.enter(g, i, t, listing)
	}
	return pairs
}

// list appends hold i's conflicts to pairs, in the order of the earlier
// holds, until its key has listed maxListed, and drops the holds that
// left from s.listing on the way.
func (s *sweep) list(g []Hold, i, base int, pairs [][2]int, listed int) ([][2]int, int) {
	h := &g[i]
	e := holdEnd(h)
	keep := s.listing[:0]
	for k, j := range s.listing {
		if listed == maxListed {
			keep = append(keep, s.listing[k:]...)
			break
		}
		if !s.st[j].active {
			continue
		}
		keep = append(keep, j)
		if a := &g[j]; a.Process != h.Process && e > a.Start {
			pairs = append(pairs, [2]int{base + int(j), base + i})
			listed++
		}
	}
	s.listing = keep
	return pairs, listed
}

// reset readies s for a key of n holds.
func (s *sweep) reset(n int) {
	if cap(s.st) < n {
		s.st = make([]sweepHold, n)
	}
	s.st = s.st[:n]
	s.ends, s.leases, s.listing = s.ends[:0], s.leases[:0], s.listing[:0]
	clear(s.procs.small)
	s.procs.other = nil
	s.total = procCount{}
}

// enter puts hold i in progress at time t (its start).
func (s *sweep) enter(g []Hold, i int, t int64, listing bool) {
	h := &g[i]
	s.st[i] = sweepHold{span: -1, active: true, ordered: true}
	for k := 1; k < len(h.leases); k++ {
		if h.leases[k].at < h.leases[k-1].at {
			s.st[i].ordered = false
			break
		}
	}
	if len(h.leases) == 0 && h.LeaseEnd != nil {
		s.st[i].ordered = false // made by hand: leaseAt knows its lease
	}
	s.count(g, i, 1)
	s.restale(g, i, t)
	if e := holdEnd(h); e != never {
		s.ends.push(timeItem{e, int32(i)})
	}
	if listing {
		s.listing = append(s.listing, int32(i))
	}
}

// leave takes hold j out of progress.
func (s *sweep) leave(g []Hold, j int) {
	s.count(g, j, -1)
	s.st[j].active = false
}

// count adds d (1 or -1) holds like j to the totals.
func (s *sweep) count(g []Hold, j, d int) {
	st := 0
	if s.st[j].stale {
		st = d
	}
	c := s.procs.at(g[j].Process)
	c.n, c.stale = c.n+d, c.stale+st
	s.total.n, s.total.stale = s.total.n+d, s.total.stale+st
}

// restale brings hold j's staleness to time t (as staleAt judges it) and
// schedules its next look, when its lease may change.
func (s *sweep) restale(g []Hold, j int, t int64) {
	h, st := &g[j], &s.st[j]
	var stale bool
	next := int64(never)
	if st.ordered {
		ls := h.leases
		for int(st.span)+1 < len(ls) && ls[st.span+1].at <= t {
			st.span++
		}
		if int(st.span)+1 < len(ls) {
			next = ls[st.span+1].at
		}
		if st.span >= 0 {
			stale = ls[st.span].end <= t
			if !stale {
				next = min(next, ls[st.span].end)
			}
		}
	} else {
		l, ok := h.leaseAt(t)
		stale = ok && l.end <= t
		for _, x := range h.leases {
			if x.at > t {
				next = min(next, x.at)
			}
		}
		if ok && !stale {
			next = min(next, l.end)
		}
	}
	if stale != st.stale {
		s.count(g, j, -1)
		st.stale = stale
		s.count(g, j, 1)
	}
	st.next = next
	if next != never {
		s.leases.push(timeItem{next, int32(j)})
	}
}

// timeItem is a hold (its index in its key) due at a time.
type timeItem struct {
	at int64
	i  int32
}

// timeHeap is a min-heap of timeItems by time.
type timeHeap []timeItem

// push adds x.
func (q *timeHeap) push(x timeItem) {
	*q = append(*q, x)
	h := *q
	for c := len(h) - 1; c > 0; {
		p := (c - 1) / 2
		if h[p].at <= h[c].at {
			break
		}
		h[p], h[c] = h[c], h[p]
		c = p
	}
}

// pop removes and returns the earliest item.
func (q *timeHeap) pop() timeItem {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for p := 0; ; {
		c := 2*p + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1].at < h[c].at {
			c++
		}
		if h[p].at <= h[c].at {
			break
		}
		h[p], h[c] = h[c], h[p]
		p = c
	}
	*q = h
	return top
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
