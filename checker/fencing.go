package checker

import (
	"fmt"
	"strings"

	"github.com/locktorture/locktorture/history"
)

// Fencing checks the protected resource's fencing: per key, in history
// order, an accepted write (ok) whose fence is lower than the highest fence
// among writes accepted before it was invoked is a stale write that got
// through. Equal fences are fine; writes without a fence are counted but not
// judged. It also counts reads and writes the resource refused as stale —
// a fail whose error mentions "stale", "fence", "token" or "reject", or one
// with no error text whose fence is below the highest fence the resource had
// seen (on accepted writes and, under fencing `all`, reads) when it was
// invoked: there the fence did its job.
func Fencing(ops []history.Op) *FencingResult {
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
