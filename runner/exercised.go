package runner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/nemesis"
)

// exerciseTally follows, in the history's one pass, whether the clients
// worked through each scripted fault that happened: a fault is a test of
// the lock only when the lock was in use around it and kept answering the
// clients after it struck. A fault is not exercised when
//
//   - no client held the lock while it acted, nor within a TTL after it
//     (no grant spanned it, and no acquire whose outcome is unknown — which
//     may have taken the lock — did), or
//   - from its start on, every one of the clients' acquires failed with an
//     error that is not the lock's: none granted, none refused busy, none
//     timed out (which a lock whose acquire waits in line for the holder
//     gives too) — the clients could not work through it (a program that
//     cannot follow a failover to the new primary: EOF, connection
//     refused), or
//   - it acts some time after it strikes (a failover, once a Sentinel
//     names the new primary) and no client asked for the lock from then
//     on: it took effect after the clients' last acquire, or never.
//
// A run whose faults were not exercised is unknown, not valid: it did not
// test what its scenario says.
type exerciseTally struct {
	ttl     int64
	windows []nemesis.Window
	per     []windowTally
	holds   map[holdKey]int64 // open holds: when each began
	acq     map[int]int64     // each process's outstanding acquire: when it was invoked
	last    int64             // the time of the last op seen
}

// holdKey is one process's hold of one key.
type holdKey struct {
	p   int
	key string
}

// windowTally is what one fault's window saw.
type windowTally struct {
	held     bool // a hold overlapped it (or its TTL after)
	acquires int  // acquires invoked from its start on
	met      int  // acquires invoked from its effect on
	answered int  // of them, granted, refused busy, or timed out
	errs     map[string]int
}

// newExerciseTally follows the windows of a run whose lease is ttl; nil
// when there is none to follow.
func newExerciseTally(windows []nemesis.Window, ttl time.Duration) *exerciseTally {
	if len(windows) == 0 {
		return nil
	}
	return &exerciseTally{ttl: int64(ttl), windows: windows, per: make([]windowTally, len(windows)),
		holds: map[holdKey]int64{}, acq: map[int]int64{}}
}

// add follows op (nil t: nothing to follow).
func (t *exerciseTally) add(op *history.Op) {
	if t == nil || op.IsNemesis() {
		return
	}
	t.last = max(t.last, op.Time)
	k := holdKey{op.Process, op.Key}
	switch {
	case op.F == history.Acquire && op.Type == history.Invoke:
		t.acq[op.Process] = op.Time
	case op.F == history.Acquire:
		invoked, ok := t.acq[op.Process]
		if !ok {
			invoked = op.Time
		}
		delete(t.acq, op.Process)
		answered := op.Type == history.OK || op.Type == history.Fail && lockAnswers[op.Error] || timedOut(op.Error)
		for i, w := range t.windows {
			if invoked < w.Start {
				continue
			}
			wt := &t.per[i]
			wt.acquires++
			if invoked >= w.Effect {
				wt.met++
			}
			if answered {
				wt.answered++
				continue
			}
			if wt.errs == nil {
				wt.errs = map[string]int{}
			}
			e := cmp.Or(op.Error, "(no error given)")
			if _, seen := wt.errs[e]; seen || len(wt.errs) < maxFailureKinds {
				wt.errs[e]++
			}
		}
		switch op.Type {
		case history.OK:
			if _, open := t.holds[k]; !open {
				t.holds[k] = op.Time
			}
		case history.Info:
			// An acquire whose outcome nobody knows may have taken the
			// lock on the server (a lost reply, a timeout): the lock was in
			// use from its invoke on, as far as anyone can tell, until it
			// expires a TTL after it ended — what lost-reply makes.
			t.hold(invoked, op.Time)
		}
	case (op.F == history.Release || op.F == history.Lost) && op.Type == history.Invoke:
		if began, open := t.holds[k]; open {
			t.hold(began, op.Time)
			delete(t.holds, k)
		}
	}
}

// hold marks the windows a hold from began to ended overlaps.
func (t *exerciseTally) hold(began, ended int64) {
	for i, w := range t.windows {
		if began <= w.Stop+t.ttl && ended >= w.Start {
			t.per[i].held = true
		}
	}
}

// problems says, for each fault that was not exercised, why; nil when
// every one was. Holds still open end with the history.
func (t *exerciseTally) problems() []string {
	if t == nil {
		return nil
	}
	for _, began := range t.holds {
		t.hold(began, t.last)
	}
	clear(t.holds)
	var out []string
	for i, w := range t.windows {
		wt := t.per[i]
		switch {
		case !wt.held:
			out = append(out, fmt.Sprintf("no client held the lock while %s acted, nor within its %s TTL after (at %s)",
				w.Step, time.Duration(t.ttl), runTime(w.Start)))
		case w.Never:
			out = append(out, fmt.Sprintf("%s struck at %s but never took effect while the clients ran", w.Step, runTime(w.Start)))
		case w.Effect > w.Start && wt.met == 0:
			out = append(out, fmt.Sprintf("%s struck at %s but took effect only at %s, after the clients' last acquire: no client met it",
				w.Step, runTime(w.Start), runTime(w.Effect)))
		case wt.acquires > 0 && wt.answered == 0:
			s := fmt.Sprintf("after %s struck (at %s), each of the clients' %d acquires failed with an error: none granted, refused busy or timed out",
				w.Step, runTime(w.Start), wt.acquires)
			if e, n := mostCommon(wt.errs); n > 0 {
				s += fmt.Sprintf("; the most common error, %d×: %q", n, shorten(e, 300))
			}
			out = append(out, s)
		}
	}
	return out
}

// timedOut reports whether a failed op's error says it ran out of time
// (the workload's "timeout: ...", an adapter's "no answer within ..."):
// an acquire that waits in line for the holder ends so too, so a timeout
// may be the lock's own answer.
func timedOut(err string) bool {
	e := strings.ToLower(err)
	for _, w := range []string{"timeout", "timed out", "deadline exceeded", "no answer within"} {
		if strings.Contains(e, w) {
			return true
		}
	}
	return false
}

// mostCommon is the error counted most often (the first in order on a tie).
func mostCommon(errs map[string]int) (string, int) {
	keys := make([]string, 0, len(errs))
	for e := range errs {
		keys = append(keys, e)
	}
	slices.Sort(keys)
	best, n := "", 0
	for _, e := range keys {
		if errs[e] > n {
			best, n = e, errs[e]
		}
	}
	return best, n
}

// runTime writes a history time (nanoseconds since the run started) in
// seconds.
func runTime(ns int64) string { return fmt.Sprintf("%.3fs", time.Duration(ns).Seconds()) }

// noteUnexercised says which scripted faults the clients could not work
// through: the run did not test them, so a valid verdict becomes unknown.
func noteUnexercised(r *checker.Results, why []string) {
	if len(why) == 0 {
		return
	}
	r.Note = strings.TrimPrefix(r.Note+"; a planned fault was not put to the test: "+strings.Join(why, "; "), "; ")
	if r.Valid == checker.Valid {
		r.Valid = checker.Unknown
	}
}
