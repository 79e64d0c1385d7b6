package runner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/clientprotocol"
	"github.com/locktorture/locktorture/history"
)

// failureTally counts a history's client ops (completions of acquire,
// release, extend, read and write) and the errors of those that failed,
// so that a run whose ops mostly failed says why in its note. Busy and
// not held are the lock's own answers, not failures.
type failureTally struct {
	ops, failed int
	errs        map[string]int // by error text, at most maxFailureKinds
	other       int            // failures whose text did not fit in errs
}

// lockAnswers are the errors a history records when the lock itself said
// no: "busy" (as workload records ErrBusy, and as the client protocol's
// adapters say it) and not held.
var lockAnswers = map[string]bool{
	"busy":                      true,
	backends.ErrBusy.Error():    true,
	backends.ErrNotHeld.Error(): true,
	"not held":                  true,
}

// maxFailureKinds bounds how many distinct error texts a tally keeps: a
// long run's errors may each carry a time or an address.
const maxFailureKinds = 1000

// add counts op.
func (t *failureTally) add(op *history.Op) {
	if op.IsNemesis() || op.Type == history.Invoke {
		return
	}
	switch op.F {
	case history.Acquire, history.Release, history.Extend, history.Read, history.Write:
	default:
		return // final reads and lost are the harness's, not the client's
	}
	t.ops++
	if op.Type == history.OK || lockAnswers[op.Error] {
		return
	}
	t.failed++
	e := op.Error
	if e == "" {
		e = "(no error given)"
	}
	if t.errs == nil {
		t.errs = map[string]int{}
	}
	if _, ok := t.errs[e]; ok || len(t.errs) < maxFailureKinds {
		t.errs[e]++
	} else {
		t.other++
	}
}

// note says, when most client ops failed, how many, the most common
// error with its count, and where to look; "" otherwise.
func (t *failureTally) note() string {
	if t.failed == 0 || 2*t.failed <= t.ops {
		return ""
	}
	type kind struct {
		err string
		n   int
	}
	var ks []kind
	for e, n := range t.errs {
		ks = append(ks, kind{e, n})
	}
	slices.SortFunc(ks, func(a, b kind) int { return cmp.Or(b.n-a.n, strings.Compare(a.err, b.err)) })
	top := ks[0]
	s := fmt.Sprintf("%d of %d client ops failed; the most common error, %d×: %q", t.failed, t.ops, top.n, shorten(top.err, 300))
	if h := clientprotocol.LoginHint(top.err); h != "" {
		s += " — " + h
	}
	return s
}

// shorten cuts s to n bytes, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// noteFailures adds the tally's note, if any, to the results' note.
func noteFailures(r *checker.Results, t *failureTally) {
	if s := t.note(); s != "" {
		r.Note = strings.TrimPrefix(r.Note+"; "+s, "; ")
	}
}
