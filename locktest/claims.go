package locktest

import (
	"fmt"
	"strings"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/scenarios"
)

// Claim is what a lock promises. A subtest fails when the run's verdict
// differs from the claim in either direction: the lock did worse than
// claimed, or better (the claim undersells it, or the scenario did not
// catch what was claimed possible).
type Claim int

const (
	// Safe: never two holders of a key at once and no update lost,
	// whatever the scenario does (pauses included).
	Safe Claim = iota
	// StaleHolderPossible: mutual exclusion while no pause or delay
	// outlasts the lease. A client frozen past its lease goes on believing
	// it holds the lock (a stale holder) — which a scenario pausing a
	// client on a step of its critical section past the lease must show; a
	// pause at a time (at:), which may or may not find the client holding
	// the lock, or replies delayed past the lease, may show one or not, and
	// both pass — but the lock service never grants a key twice while both
	// leases are valid (no double grant).
	StaleHolderPossible
	// FencedWrites: StaleHolderPossible, but every grant carries a fencing
	// token and the resource, checking it (fencing: all or writes),
	// rejects the stale holder's writes: no update is lost.
	FencedWrites
)

// String is the claim in the words the failures use.
func (c Claim) String() string {
	switch c {
	case Safe:
		return "safe"
	case StaleHolderPossible:
		return "stale holder possible"
	case FencedWrites:
		return "fenced writes reject stale holders"
	}
	return fmt.Sprintf("Claim(%d)", int(c))
}

// expectation is a claim (or a built-in backend's expectation) as checker
// verdicts for one scenario.
type expectation struct {
	// what says the expectation in words: "the claim \"safe\"".
	what     string
	valid    string
	checkers map[string]string
	// staleOnly: an overlap must be a stale holder, never a double grant.
	staleOnly bool
	// orValid: a valid run (every checker valid) meets it too: the fault
	// may or may not make a stale holder.
	orValid bool
}

// pastLease names the scripted fault that can leave a client holding a
// lock whose lease has run out, and whether it must (Scenario.PastLease).
func pastLease(sc *scenarios.Scenario) (fault string, certain bool) { return sc.PastLease() }

// claimExpectation maps a claim onto the checkers' verdicts for sc.
func claimExpectation(c Claim, sc *scenarios.Scenario) expectation {
	e := expectation{what: fmt.Sprintf("the claim %q", c.String()), valid: "valid", checkers: map[string]string{}}
	fault, certain := pastLease(sc)
	e.orValid = !certain
	switch {
	case c == Safe, fault == "":
		e.orValid = false
		e.checkers[checker.NameMutex] = "valid"
		e.checkers[checker.NameLinearizable] = "valid"
		e.checkers[checker.NameLostUpdate] = "valid"
		e.checkers[checker.NameFencing] = "valid"
	case c == StaleHolderPossible:
		e.valid, e.staleOnly = "invalid", true
		e.checkers[checker.NameMutex] = "invalid"
	case c == FencedWrites:
		e.valid, e.staleOnly = "invalid", true
		e.checkers[checker.NameMutex] = "invalid"
		e.checkers[checker.NameFencing] = "valid"
		e.checkers[checker.NameLostUpdate] = "valid"
	}
	return e
}

// likeExpectation is the scenario's built-in expectation for a backend.
func likeExpectation(backend string, sc *scenarios.Scenario) expectation {
	x := sc.Expected(backend)
	e := expectation{what: fmt.Sprintf("the built-in expectation of %s", backend), valid: x.Valid, checkers: x.Checkers}
	if e.valid == "" {
		e.valid = "valid"
	}
	return e
}

// judge compares results with e: whether they match and, when not, which
// way they differ, in words.
func judge(res *checker.Results, e expectation, sc *scenarios.Scenario) (bool, string) {
	ok, diff := scenarios.Judge(res, e.valid, e.checkers)
	m := res.Checkers.Mutex
	if ok && e.staleOnly && m != nil && m.DoubleGrants > 0 {
		return false, fmt.Sprintf("less safe than %s: %d double grant(s) — the lock service gave a key to two clients while both leases were valid; only a stale holder (a pause past the lease) was claimed possible", e.what, m.DoubleGrants)
	}
	if ok {
		return true, ""
	}
	if e.orValid && res.Valid == checker.Valid {
		return true, ""
	}
	got := res.Valid.String()
	switch {
	case got == "unknown":
		return false, fmt.Sprintf("undecided: the run could not tell whether %s holds (%s)%s", e.what, diff, note(res))
	case got == "invalid" && e.valid != "invalid", worseChecker(res, e):
		return false, fmt.Sprintf("less safe than %s: %s", e.what, diff)
	default:
		why := ""
		if f, _ := pastLease(sc); f != "" && e.valid == "invalid" {
			why = fmt.Sprintf(" — %s, past the %s lease, was expected to make a stale holder; the lock held (is the claim too weak?) or the fault did not bite", f, sc.TTL.D())
		}
		return false, fmt.Sprintf("safer than %s: %s%s", e.what, diff, why)
	}
}

// worseChecker reports whether a checker the expectation calls valid came
// out invalid.
func worseChecker(res *checker.Results, e expectation) bool {
	for name, v := range res.Checkers.Verdicts() {
		if e.checkers[name] == "valid" && v == checker.Invalid {
			return true
		}
	}
	return false
}

func note(res *checker.Results) string {
	if res.Note == "" {
		return ""
	}
	return "; " + strings.TrimSpace(res.Note)
}
