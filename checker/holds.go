package checker

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/locktorture/locktorture/history"
)

// What an op does to a hold of its process on its key.
const (
	holdNone   = iota
	holdStarts // an acquire ok: a hold begins (or, if one is open, its lease renews)
	holdRenews // an extend ok: the open hold's lease renews
	holdEnds   // a release invoke or a lost op: the hold ends, whatever the release's outcome
)

// holdEvent says what op does to a hold: the one rule Holds and Tracker
// share. Nemesis ops do nothing.
func holdEvent(op *history.Op) int {
	switch {
	case op.IsNemesis():
		return holdNone
	case op.F == history.Acquire && op.Type == history.OK:
		return holdStarts
	case op.F == history.Extend && op.Type == history.OK:
		return holdRenews
	case op.F == history.Release && op.Type == history.Invoke:
		return holdEnds
	case op.F == history.Lost && op.Type == history.Invoke:
		// The client learned it had lost the lock: from here on it no
		// longer believes it holds it, whatever its later release says.
		return holdEnds
	}
	return holdNone
}

// isLockOp reports whether op starts or ends a hold: the ops the
// linearizable checker gives porcupine.
func isLockOp(op *history.Op) bool {
	e := holdEvent(op)
	return e == holdStarts || e == holdEnds
}

// Tracker follows holds live, op by op, by the same rule as Holds — for a
// progress display that counts holds, overlaps and stale holders while a
// run goes on. (It cannot judge transactional grants, which only their
// COMMIT settles; the checkers do.) The zero Tracker is ready to use; it
// is not safe for concurrent use.
type Tracker struct {
	holders map[string][]liveHold // key -> who holds it now
	holds   int
	overlap int
	stale   int
}

// liveHold is a process's hold as it stands: its lease's end, by the
// latest grant or extension (0: no lease).
type liveHold struct {
	process  int
	leaseEnd int64
	leased   bool
}

// Observe applies op and returns the number of other processes that held
// its key when op began a hold: the overlaps it starts. An overlap is a
// stale holder, as the mutex checker says, when the earlier holder's lease
// had run out by then.
func (t *Tracker) Observe(op *history.Op) (overlaps int) {
	ev := holdEvent(op)
	if ev == holdNone { // most ops: no need to look the key up
		return 0
	}
	if t.holders == nil {
		t.holders = map[string][]liveHold{}
	}
	hs := t.holders[op.Key]
	switch ev {
	case holdStarts:
		mine := -1
		for i, h := range hs {
			if h.process == op.Process {
				mine = i
				continue
			}
			overlaps++
			if h.leased && h.leaseEnd <= op.Time || op.LeaseMS != nil && *op.LeaseMS <= 0 {
				t.stale++
			}
		}
		switch {
		case mine < 0:
			t.holds++
			h := liveHold{process: op.Process}
			if op.LeaseMS != nil {
				h.leaseEnd, h.leased = op.Time+*op.LeaseMS*1e6, true
			}
			t.holders[op.Key] = append(hs, h)
		case op.LeaseMS != nil:
			hs[mine].leaseEnd, hs[mine].leased = op.Time+*op.LeaseMS*1e6, true
		}
	case holdRenews:
		for i := range hs {
			if hs[i].process == op.Process && op.LeaseMS != nil {
				hs[i].leaseEnd, hs[i].leased = op.Time+*op.LeaseMS*1e6, true
			}
		}
	case holdEnds:
		for i, h := range hs {
			if h.process == op.Process {
				if len(hs) == 1 {
					// The key's one holder: its room is kept for the next
					// (a new slice for every hold was the live counts'
					// one allocation a hold).
					t.holders[op.Key] = hs[:0]
					break
				}
				t.holders[op.Key] = append(hs[:i:i], hs[i+1:]...)
				break
			}
		}
	}
	t.overlap += overlaps
	return overlaps
}

// Totals returns the holds, overlaps and stale holders seen so far.
func (t *Tracker) Totals() (holds, overlaps, stale int) { return t.holds, t.overlap, t.stale }

// holderSet is the set of processes holding one key. It is a slice, as a
// key nearly always has one holder or none, with an index by process once
// it has holderIndexAt (a broken lock's crowd), so that neither adding nor
// removing a holder walks the crowd. Its order is not kept. The zero
// holderSet is empty.
type holderSet struct {
	ps  []int
	pos map[int]int // p's place in ps, once it has many
}

// holderIndexAt is how many holders a holderSet indexes from.
const holderIndexAt = 16

// len returns how many processes hold the key.
func (s *holderSet) len() int { return len(s.ps) }

// index returns p's place in s.ps, or -1.
func (s *holderSet) index(p int) int {
	if s.pos == nil {
		return slices.Index(s.ps, p)
	}
	if i, ok := s.pos[p]; ok {
		return i
	}
	return -1
}

// add adds p and reports whether it was not there yet.
func (s *holderSet) add(p int) bool {
	if s.index(p) >= 0 {
		return false
	}
	s.ps = append(s.ps, p)
	switch {
	case s.pos != nil:
		s.pos[p] = len(s.ps) - 1
	case len(s.ps) >= holderIndexAt:
		s.pos = make(map[int]int, 2*len(s.ps))
		for i, q := range s.ps {
			s.pos[q] = i
		}
	}
	return true
}

// remove removes p and reports whether it was there.
func (s *holderSet) remove(p int) bool {
	i := s.index(p)
	if i < 0 {
		return false
	}
	last := len(s.ps) - 1
	if i != last {
		s.ps[i] = s.ps[last]
		if s.pos != nil {
			s.pos[s.ps[i]] = i
		}
	}
	s.ps = s.ps[:last]
	if s.pos != nil {
		delete(s.pos, p)
		if len(s.ps) == 0 {
			s.pos = nil // the crowd is gone
		}
	}
	return true
}

// holdKey names the hold a process may have on one key.
type holdKey struct {
	process int
	key     string
}

// Holds returns every span in which a process believed it held a key: from
// its acquire ok to its next release invoke on that key (whatever the
// release's outcome) or its next lost op on that key, whichever comes
// first, or to the end of the history (Open, ending at the last
// op's time). Acquires that completed fail or info are not holds. The fence
// and lease come from the acquire ok; an extend ok carrying lease_ms moves
// LeaseEnd to its own time plus that lease, and so does an acquire ok by a
// process that already holds the key (its hold goes on). Each hold keeps its
// lease's history too, so a checker can ask how the lease stood at any
// moment (leaseAt): a later extension does not rewrite the past. Nemesis
// ops are ignored. The result is sorted by key, start and process.
func Holds(ops []history.Op) []Hold {
	return holdsOf(resolveTx(ops))
}

// holdsOf is Holds of a history resolveTx has judged already.
func holdsOf(ops []history.Op) []Hold {
	n := 0
	for i := range ops {
		if holdEvent(&ops[i]) == holdStarts {
			n++
		}
	}
	holds := make([]Hold, 0, n)
	a := holdAlloc{holds: n}
	open := map[holdKey]int{} // index into holds
	var last int64
	for i := range ops {
		op := &ops[i]
		if op.Time > last {
			last = op.Time
		}
		if op.IsNemesis() {
			continue
		}
		switch holdEvent(op) {
		case holdStarts:
			hk := holdKey{op.Process, op.Key}
			if j, ok := open[hk]; ok {
				// Acquired again without a release: the client held the
				// key all along; the new grant only renews its lease.
				if op.LeaseMS != nil {
					holds[j].renew(&a, op.Time, *op.LeaseMS)
				}
				continue
			}
			h := Hold{Process: op.Process, Key: op.Key, Start: op.Time, Open: true}
			if op.Fence != nil {
				h.Fence = a.int64(*op.Fence)
			}
			if op.LeaseMS != nil {
				h.LeaseMS = a.int64(*op.LeaseMS)
				h.renew(&a, op.Time, *op.LeaseMS)
			}
			h.Nodes = grantNodes(op)
			open[hk] = len(holds)
			holds = append(holds, h)
		case holdRenews:
			if op.LeaseMS == nil {
				continue
			}
			if j, ok := open[holdKey{op.Process, op.Key}]; ok {
				holds[j].renew(&a, op.Time, *op.LeaseMS)
			}
		case holdEnds:
			hk := holdKey{op.Process, op.Key}
			if j, ok := open[hk]; ok {
				holds[j].End = op.Time
				holds[j].Open = false
				delete(open, hk)
			}
		}
	}
	for _, j := range open {
		holds[j].End = last
	}
	return sortHolds(holds)
}

// compareHolds orders holds by key, start and process.
func compareHolds(a, b *Hold) int {
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	return cmp.Compare(a.Process, b.Process)
}

// sortHolds orders holds by key, start and process, in place. Holds are
// made in history order, so within a key they are nearly always sorted
// already: grouping by key and sorting only the groups that need it is
// linear where sorting the whole slice of large structs is not. The groups
// are put in place by following the permutation's cycles, so a million-op
// history's holds are not copied.
func sortHolds(holds []Hold) []Hold {
	sorted := true
	for i := 1; i < len(holds); i++ {
		if compareHolds(&holds[i-1], &holds[i]) > 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return holds
	}
	groups := map[string][]int32{}
	var keys []string
	for i := range holds {
		k := holds[i].Key
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], int32(i))
	}
	slices.Sort(keys)
	from := make([]int32, 0, len(holds)) // the hold that goes to each place
	for _, k := range keys {
		from = append(from, groups[k]...)
	}
	permute(holds, from)
	at := 0
	for _, k := range keys {
		g := holds[at : at+len(groups[k])]
		at += len(g)
		for i := 1; i < len(g); i++ {
			if compareHolds(&g[i-1], &g[i]) > 0 {
				slices.SortFunc(g, func(a, b Hold) int { return compareHolds(&a, &b) })
				break
			}
		}
	}
	return holds
}

// permute moves holds[from[i]] to holds[i] for every i, in place; from is
// a permutation, which it uses up.
func permute(holds []Hold, from []int32) {
	for i := range from {
		if from[i] < 0 {
			continue
		}
		first := holds[i]
		j := i
		for {
			src := int(from[j])
			from[j] = -1
			if src == i {
				holds[j] = first
				break
			}
			holds[j] = holds[src]
			j = src
		}
	}
}

// leaseSpan is one grant or extension of a hold's lease: from at, it ran until
// end, and was ms long.
type leaseSpan struct{ at, end, ms int64 }

// renew records a grant or extension of h's lease at time t for ms.
func (h *Hold) renew(a *holdAlloc, t, ms int64) {
	end := t + ms*1e6
	h.LeaseEnd = a.int64(end)
	if len(h.leases) == 0 {
		h.leases = a.lease(leaseSpan{at: t, end: end, ms: ms})
		return
	}
	h.leases = append(h.leases, leaseSpan{at: t, end: end, ms: ms})
}

// holdAlloc hands out the small values of many holds (their fences, leases
// and first lease spans) from blocks, not one allocation each: a million-op
// history has a hundred thousand holds. The first blocks are sized for the
// holds there are (a grant takes a fence, a lease and its end), so that a
// Stream's segment of a few hundred holds does not take blocks made for a
// hundred thousand.
type holdAlloc struct {
	holds  int // how many holds the values are for
	ints   []int64
	leases []leaseSpan
}

// Block sizes of a holdAlloc, at most.
const (
	holdIntsBlock   = 4096
	holdLeasesBlock = 2048
)

// int64 returns a pointer to a new int64 holding v.
func (a *holdAlloc) int64(v int64) *int64 {
	if len(a.ints) == cap(a.ints) {
		a.ints = make([]int64, 0, min(holdIntsBlock, 3*a.holds+8))
	}
	a.ints = append(a.ints, v)
	return &a.ints[len(a.ints)-1]
}

// lease returns a one-span slice whose append copies (cap 1), so a later
// extension never writes into its neighbour's span.
func (a *holdAlloc) lease(l leaseSpan) []leaseSpan {
	if len(a.leases) == cap(a.leases) {
		a.leases = make([]leaseSpan, 0, min(holdLeasesBlock, a.holds+8))
	}
	a.leases = append(a.leases, l)
	n := len(a.leases)
	return a.leases[n-1 : n : n]
}

// leaseAt returns the lease as it stood at time t: the latest grant or
// extension completed at or before t. ok is false when the hold had no
// lease by then (it never runs out).
func (h *Hold) leaseAt(t int64) (l leaseSpan, ok bool) {
	for i := len(h.leases) - 1; i >= 0; i-- {
		if h.leases[i].at <= t {
			return h.leases[i], true
		}
	}
	if len(h.leases) == 0 && h.LeaseEnd != nil {
		// A Hold made by hand, without its history: its last lease is all
		// there is.
		ms := int64(0)
		if h.LeaseMS != nil {
			ms = *h.LeaseMS
		}
		return leaseSpan{at: h.Start, end: *h.LeaseEnd, ms: ms}, true
	}
	return leaseSpan{}, false
}

// grantNodes reads the servers that granted a quorum lock from an acquire
// ok's value ({"nodes": ["A", "B", "C"]}), if it has one.
func grantNodes(op *history.Op) []string {
	if len(op.Value) == 0 || op.Value[0] != '{' {
		return nil
	}
	var v struct {
		Nodes []string `json:"nodes"`
	}
	if json.Unmarshal(op.Value, &v) != nil {
		return nil
	}
	return v.Nodes
}
