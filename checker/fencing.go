package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/locktorture/locktorture/history"
)

// checkFencing checks the protected resource's fencing: per key, in history
// order, an accepted write (ok) whose fence is lower than the highest fence
// among writes accepted before it was invoked is a stale write that got
// through. Equal fences are fine; writes without a fence are counted but not
// judged. It also counts reads and writes the resource refused as stale —
// a fail whose error mentions "stale", "fence", "token" or "reject", or one
// with no error text whose fence is below the highest fence the resource had
// seen (on accepted writes and, under fencing `all`, reads) when it was
// invoked: there the fence did its job.
func checkFencing(ops []history.Op) *FencingResult {
	ops = resolveTx(ops)
	f := newFencing()
	for i := range ops {
		f.step(&ops[i], int64(i))
	}
	return f.finish()
}

// fencePend is a read or write invoke awaiting its completion.
type fencePend struct {
	f       string
	key     string
	fence   *int64
	highest int64
	seen    bool  // some fenced write was accepted before the invoke
	any     int64 // seenFence at the invoke (0 when none)
}

// fencing is the fencing checker's state, fed one op at a time (after
// resolveTx) with the op's position in the history. Its state is per key
// and per process, so a key's ops may come in stretches apart from other
// keys' (see Stream): the listed violations are put back in history order
// at the end.
type fencing struct {
	res        *FencingResult
	highest    map[string]int64 // highest fence accepted so far, by key
	seenFence  map[string]int64 // highest fence on any accepted read or write, by key
	pending    map[int]fencePend
	violations map[string][]listed[StaleWrite] // the first maxListed, by key
	rejections map[string][]listed[Rejection]
}

// listed is an entry of a result's list with its op's position in the history.
type listed[T any] struct {
	pos int64
	v   T
}

func newFencing() *fencing {
	return &fencing{
		res:     &FencingResult{Valid: Valid, Violations: []StaleWrite{}},
		highest: map[string]int64{}, seenFence: map[string]int64{}, pending: map[int]fencePend{},
		violations: map[string][]listed[StaleWrite]{}, rejections: map[string][]listed[Rejection]{},
	}
}

// step applies op, the history's op at position pos.
func (s *fencing) step(op *history.Op, pos int64) {
	res := s.res
	if op.IsNemesis() || (op.F != history.Write && op.F != history.Read) {
		return
	}
	if op.Type == history.Invoke {
		h, seen := s.highest[op.Key]
		s.pending[op.Process] = fencePend{op.F, op.Key, op.Fence, h, seen, s.seenFence[op.Key]}
		return
	}
	p, ok := s.pending[op.Process]
	if !ok || p.f != op.F || p.key != op.Key {
		return
	}
	delete(s.pending, op.Process)
	fence := op.Fence
	if fence == nil {
		fence = p.fence
	}
	if op.Type == history.OK && fence != nil && *fence > s.seenFence[op.Key] {
		s.seenFence[op.Key] = *fence
	}
	switch {
	case op.Type == history.Fail && staleRejection(op.Error, fence, p.any):
		res.RejectedStale++
		if l := s.rejections[op.Key]; len(l) < maxListed {
			s.rejections[op.Key] = append(l, listed[Rejection]{pos, rejection(op, fence)})
		}
	case op.F == history.Write && op.Type == history.OK:
		if fence == nil {
			res.UnfencedWrites++
			return
		}
		res.FencedWrites++
		if p.seen && *fence < p.highest {
			res.Count++
			if l := s.violations[op.Key]; len(l) < maxListed {
				s.violations[op.Key] = append(l, listed[StaleWrite]{pos, StaleWrite{
					Key: op.Key, Process: op.Process, Index: op.Index, Time: op.Time,
					Fence: *fence, Highest: p.highest,
					Description: fmt.Sprintf("process %d's write to %s with fence %d was accepted at %s after a write with fence %d had been accepted",
						op.Process, op.Key, *fence, secs(op.Time), p.highest),
				}})
			}
		}
		if h, seen := s.highest[op.Key]; !seen || *fence > h {
			s.highest[op.Key] = *fence
		}
	}
}

// finish returns the result, its lists in history order.
func (s *fencing) finish() *FencingResult {
	res := s.res
	res.Violations = append(res.Violations, firstListed(s.violations)...)
	res.Rejections = append(res.Rejections, firstListed(s.rejections)...)
	if len(res.Rejections) == 0 {
		res.Rejections = nil
	}
	if res.Count > 0 {
		res.Valid = Invalid
	}
	return res
}

// firstListed merges per-key lists into the first maxListed entries in
// history order.
func firstListed[T any](byKey map[string][]listed[T]) []T {
	var all []listed[T]
	for _, l := range byKey {
		all = append(all, l...)
	}
	slices.SortFunc(all, func(a, b listed[T]) int { return cmp.Compare(a.pos, b.pos) })
	out := make([]T, 0, min(len(all), maxListed))
	for _, l := range all[:min(len(all), maxListed)] {
		out = append(out, l.v)
	}
	return out
}

// staleRejection reports whether a failed read or write was refused as
// stale: its error says so or, with no error given, its fence was below one
// the resource had already seen.
func staleRejection(err string, fence *int64, seen int64) bool {
	e := strings.ToLower(err)
	for _, w := range []string{"stale", "fence", "token", "reject"} {
		if strings.Contains(e, w) {
			return true
		}
	}
	return e == "" && fence != nil && *fence < seen
}

// rejection describes a read or write the resource refused as stale.
func rejection(op *history.Op, fence *int64) Rejection {
	r := Rejection{Key: op.Key, Process: op.Process, F: op.F, Index: op.Index, Time: op.Time, Error: op.Error}
	with := ""
	if fence != nil {
		r.Fence = history.Int64(*fence)
		with = fmt.Sprintf(" with fence %d", *fence)
	}
	r.Description = fmt.Sprintf("the resource rejected process %d's %s to %s%s (%s)", op.Process, op.F, op.Key, with, op.Error)
	return r
}
