package checker

// This file keeps the plain versions of what was made faster (or made to
// stream), as the references the fuzz tests hold the new ones to:
// lockOperations (before it stopped boxing a lockInput per operation and
// growing slices by append; see FuzzLockOperations), sortHolds (before it
// sorted in place; see FuzzSortHolds), checkFencing (before it was fed op by
// op; see FuzzStreamMatchesBatch, which holds Stream to the batch checkers)
// and mutex (before it counted overlaps without listing every pair; see
// FuzzMutexMatchesPlain).

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/locktorture/locktorture/history"
)

// plainInput is one lock operation as the plain version gave it to porcupine.
type plainInput struct {
	release bool
	process int
	key     string
	outcome history.Type // the completion's type, for the visualization
	fence   *int64
}

// plainEvent is the call or the return of one lock operation of a key.
type plainEvent struct {
	time    int64
	pos     int // position in the history, for program order at equal times
	process int
	op      int  // index of the operation in the key's list
	ret     bool // a return, else a call
	start   int  // the hold this acquire return starts, or -1
	end     int  // the hold this release call ends, or -1
}

// plainKeyLocks gathers one key's lock operations, their events and holds.
type plainKeyLocks struct {
	ops    []porcupine.Operation
	events []plainEvent
	holds  []plainSpan // from the acquire ok to the release invoke
}

// plainSpan is a hold's start and end; an open one never ends.
type plainSpan struct {
	start, end int64
	open       bool
}

// plainPending is a lock invoke awaiting its completion.
type plainPending struct {
	op   *history.Op
	pos  int
	ends int // the hold its release invoke ends, or -1
}

// plainLockOperations turns a history into porcupine operations, by key. Only
// acquires that completed ok are kept (a failed or indeterminate acquire gave
// the client no hold); every release is kept, whatever its outcome, since the
// client stops believing it holds the lock when it invokes one. A release
// still pending at the end returns at the last op's time. Other ops are not
// lock operations. With meta, each operation carries its real times for the
// visualization.
//
// Times are then renumbered (see plainOrderTies); only their order matters to
// porcupine.
func plainLockOperations(ops []history.Op, meta bool) map[string][]porcupine.Operation {
	ops = resolveTx(ops)
	keys := map[string]*plainKeyLocks{}
	pending := map[int]plainPending{} // each process's outstanding lock invoke
	holding := map[holdKey]int{}      // open holds, as indexes into their key's holds
	var last int64
	add := func(pl plainPending, outcome history.Type, ret int64, retPos int, fence *int64) {
		inv := pl.op
		kl := keys[inv.Key]
		if kl == nil {
			kl = &plainKeyLocks{}
			keys[inv.Key] = kl
		}
		in := plainInput{release: letsGo(inv.F), process: inv.Process, key: inv.Key, outcome: outcome, fence: fence}
		o := porcupine.Operation{ClientId: inv.Process, Input: in, Call: inv.Time, Return: ret}
		if meta {
			o.Metadata = opTimes{call: inv.Time, ret: ret}
		}
		n := len(kl.ops)
		kl.ops = append(kl.ops, o)
		call := plainEvent{time: inv.Time, pos: pl.pos, process: inv.Process, op: n, start: -1, end: pl.ends}
		rev := plainEvent{time: ret, pos: retPos, process: inv.Process, op: n, ret: true, start: -1, end: -1}
		if !in.release {
			hk := holdKey{inv.Process, inv.Key}
			if _, held := holding[hk]; !held {
				holding[hk] = len(kl.holds)
				rev.start = len(kl.holds)
				kl.holds = append(kl.holds, plainSpan{start: ret, open: true})
			}
		}
		kl.events = append(kl.events, call, rev)
	}
	for i := range ops {
		op := &ops[i]
		last = max(last, op.Time)
		if op.IsNemesis() || (op.F != history.Acquire && !letsGo(op.F)) {
			continue
		}
		if op.Type == history.Invoke {
			pl := plainPending{op: op, pos: i, ends: -1}
			if letsGo(op.F) {
				// The hold ends at the release invoke.
				hk := holdKey{op.Process, op.Key}
				if h, ok := holding[hk]; ok {
					pl.ends = h
					keys[op.Key].holds[h].end = op.Time
					keys[op.Key].holds[h].open = false
					delete(holding, hk)
				}
			}
			pending[op.Process] = pl
			continue
		}
		pl, ok := pending[op.Process]
		if ok && (pl.op.F != op.F || pl.op.Key != op.Key) {
			ok = false
		}
		if ok {
			delete(pending, op.Process)
		}
		if op.F != history.Acquire || op.Type != history.OK {
			if ok && letsGo(op.F) {
				add(pl, op.Type, op.Time, i, nil)
			}
			continue
		}
		if !ok { // an acquire ok without its invoke: take it as instant
			pl = plainPending{op: op, pos: i, ends: -1}
		}
		fence := op.Fence
		if fence == nil {
			fence = pl.op.Fence
		}
		add(pl, op.Type, op.Time, i, fence)
	}
	procs := make([]int, 0, len(pending))
	for p := range pending {
		procs = append(procs, p)
	}
	slices.Sort(procs)
	for _, p := range procs {
		if pl := pending[p]; letsGo(pl.op.F) {
			add(pl, history.Info, last, len(ops), nil)
		}
	}
	out := make(map[string][]porcupine.Operation, len(keys))
	for k, kl := range keys {
		plainOrderTies(kl)
		out[k] = kl.ops
	}
	return out
}

// plainOrderTies renumbers a key's times so that porcupine, which sees only
// intervals, answers exactly the mutex checker's question even when events
// share a timestamp. Porcupine takes [call, return] as closed intervals, so
// two events at one instant may be linearized in either order. That is right
// between processes (a hold may end and another begin at the same
// nanosecond: a hand-off), but wrong within one process, whose ops happen in
// program order. So events at one instant are spread over distinct slots,
// kept in program order within each process, in three phases: first every
// process's events up to a release that ends a hold begun earlier; then, one
// process after another, everything else (holds that begin and end at this
// instant); last, every acquire return that begins a hold lasting past it,
// and what follows. A hold ending at an instant thus comes before any hold
// beginning at it, as in the mutex checker.
func plainOrderTies(kl *plainKeyLocks) {
	ev := kl.events
	slices.SortStableFunc(ev, func(a, b plainEvent) int {
		if c := cmp.Compare(a.time, b.time); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	// Slots per instant: the largest group of events sharing one.
	width := 1
	for i := 0; i < len(ev); {
		j := i
		for j < len(ev) && ev[j].time == ev[i].time {
			j++
		}
		width = max(width, j-i)
		i = j
	}
	endAt := map[int]int{}   // process -> position in group of its last hold-ending call
	startAt := map[int]int{} // process -> position in group of its hold-starting return
	instant := int64(0)
	for i := 0; i < len(ev); instant++ {
		t := ev[i].time
		j := i
		for j < len(ev) && ev[j].time == t {
			j++
		}
		group := ev[i:j]
		if len(group) == 1 { // the usual case: nothing to order
			plainSetTime(kl, group[0], instant*int64(width))
			i = j
			continue
		}
		clear(endAt)
		clear(startAt)
		for g, e := range group {
			if e.end >= 0 && kl.holds[e.end].start < t {
				endAt[e.process] = g
			}
			if e.start >= 0 {
				if h := kl.holds[e.start]; h.open || h.end > t {
					if _, seen := startAt[e.process]; !seen {
						startAt[e.process] = g
					}
				}
			}
		}
		order := make([]int, 0, len(group)) // group positions in slot order
		for pass := int8(1); pass <= 3; pass++ {
			from := len(order)
			for g, e := range group {
				ph := int8(2)
				if at, ok := endAt[e.process]; ok && g <= at {
					ph = 1
				} else if at, ok := startAt[e.process]; ok && g >= at {
					ph = 3
				}
				if ph == pass {
					order = append(order, g)
				}
			}
			if pass == 2 {
				slices.SortStableFunc(order[from:], func(a, b int) int {
					return cmp.Compare(group[a].process, group[b].process)
				})
			}
		}
		for slot, g := range order {
			plainSetTime(kl, group[g], instant*int64(width)+int64(slot))
		}
		i = j
	}
}

// plainSetTime gives an event its new time.
func plainSetTime(kl *plainKeyLocks, e plainEvent, at int64) {
	if e.ret {
		kl.ops[e.op].Return = at
	} else {
		kl.ops[e.op].Call = at
	}
}

// plainSortHolds orders holds by key, start and process. Holds are made in
// history order, so within a key they are nearly always sorted already:
// grouping by key and sorting only the groups that need it is linear where
// sorting the whole slice of large structs is not.
func plainSortHolds(holds []Hold) []Hold {
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
	groups := map[string][]int{}
	var keys []string
	for i := range holds {
		k := holds[i].Key
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], i)
	}
	slices.Sort(keys)
	out := make([]Hold, 0, len(holds))
	for _, k := range keys {
		from := len(out)
		for _, i := range groups[k] {
			out = append(out, holds[i])
		}
		g := out[from:]
		for i := 1; i < len(g); i++ {
			if compareHolds(&g[i-1], &g[i]) > 0 {
				slices.SortFunc(g, func(a, b Hold) int { return compareHolds(&a, &b) })
				break
			}
		}
	}
	return out
}

// plainFencing is checkFencing as it was before it became a state fed op by op
// (fencing, which Stream feeds key by key): the reference of
// FuzzStreamMatchesBatch.
func plainFencing(ops []history.Op) *FencingResult {
	ops = resolveTx(ops)
	res := &FencingResult{Valid: Valid, Violations: []StaleWrite{}}
	highest := map[string]int64{}   // highest fence accepted so far, by key
	seenFence := map[string]int64{} // highest fence on any accepted read or write, by key
	type pend struct {
		op      *history.Op
		highest int64
		seen    bool  // some fenced write was accepted before the invoke
		any     int64 // seenFence at the invoke (0 when none)
	}
	pending := map[int]pend{}
	for i := range ops {
		op := &ops[i]
		if op.IsNemesis() || (op.F != history.Write && op.F != history.Read) {
			continue
		}
		if op.Type == history.Invoke {
			h, seen := highest[op.Key]
			pending[op.Process] = pend{op, h, seen, seenFence[op.Key]}
			continue
		}
		p, ok := pending[op.Process]
		if !ok || p.op.F != op.F || p.op.Key != op.Key {
			continue
		}
		delete(pending, op.Process)
		fence := op.Fence
		if fence == nil {
			fence = p.op.Fence
		}
		if op.Type == history.OK && fence != nil && *fence > seenFence[op.Key] {
			seenFence[op.Key] = *fence
		}
		switch {
		case op.Type == history.Fail && staleRejection(op.Error, fence, p.any):
			res.RejectedStale++
			if len(res.Rejections) < maxListed {
				res.Rejections = append(res.Rejections, rejection(op, fence))
			}
		case op.F == history.Write && op.Type == history.OK:
			if fence == nil {
				res.UnfencedWrites++
				continue
			}
			res.FencedWrites++
			if p.seen && *fence < p.highest {
				res.Count++
				if len(res.Violations) < maxListed {
					res.Violations = append(res.Violations, StaleWrite{
						Key: op.Key, Process: op.Process, Index: op.Index, Time: op.Time,
						Fence: *fence, Highest: p.highest,
						Description: fmt.Sprintf("process %d's write to %s with fence %d was accepted at %s after a write with fence %d had been accepted",
							op.Process, op.Key, *fence, secs(op.Time), p.highest),
					})
				}
			}
			if h, seen := highest[op.Key]; !seen || *fence > h {
				highest[op.Key] = *fence
			}
		}
	}
	if res.Count > 0 {
		res.Valid = Invalid
	}
	return res
}

// plainMutex is mutex as it was before it counted overlaps without making
// every pair: it kept each key's earlier holds that had not ended in a
// list, tried every one against each new hold, and listed every conflict
// before sorting them and keeping the first maxListed. Its time and memory
// grew with the square of a key's concurrent holders.
func plainMutex(ops []history.Op, hs func() []Hold) *MutexResult {
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
