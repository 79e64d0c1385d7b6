package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/nemesis"
)

// The claims a program of the user's may state for its row
// (--exec-claim NAME=CLAIM): what its cells are judged against.
const (
	// ClaimSafe: never two holders of a key at once and no update lost,
	// whatever the fault.
	ClaimSafe = "safe"
	// ClaimStaleHolderPossible: mutual exclusion while no pause or delay
	// outlasts the lease; a client frozen past its lease may go on as a
	// stale holder.
	ClaimStaleHolderPossible = "stale-holder-possible"
	// ClaimLike is the prefix of like:BACKEND: whatever each scenario
	// expects of that built-in backend.
	ClaimLike = "like:"
)

// CheckClaim checks a claim's spelling: safe, stale-holder-possible, or
// like:BACKEND with BACKEND a backend of the registry.
func CheckClaim(claim string) error {
	switch {
	case claim == ClaimSafe, claim == ClaimStaleHolderPossible:
		return nil
	case strings.HasPrefix(claim, ClaimLike):
		b := strings.TrimPrefix(claim, ClaimLike)
		if _, _, err := backends.Lookup(b); err != nil || b == ExecBackend {
			return fmt.Errorf("claim %q: %q is no built-in backend (locktorture list backends)", claim, b)
		}
		return nil
	}
	return fmt.Errorf("claim %q: want %s, %s or %sBACKEND", claim, ClaimSafe, ClaimStaleHolderPossible, ClaimLike)
}

// ClaimExpectation is what claim expects of a run of sc (CheckClaim first).
// ok is false when the claim says nothing of sc: like:BACKEND where sc does
// not run BACKEND.
func (sc *Scenario) ClaimExpectation(claim string) (e Expectation, ok bool) {
	if b, like := strings.CutPrefix(claim, ClaimLike); like {
		if !sc.Applies(b) {
			return Expectation{}, false
		}
		e = sc.Expected(b)
		if e.Valid == "" {
			e.Valid = checker.Valid.String()
		}
		return e, true
	}
	all := map[string]string{checker.NameMutex: "valid", checker.NameLinearizable: "valid", checker.NameLostUpdate: "valid", checker.NameFencing: "valid"}
	fault, certain := sc.PastLease()
	switch {
	case claim == ClaimSafe, fault == "":
		return Expectation{Valid: checker.Valid.String(), Checkers: all}, true
	case certain:
		return Expectation{Valid: checker.Invalid.String(), Checkers: map[string]string{checker.NameMutex: "invalid"}}, true
	}
	return Expectation{Valid: Either, Checkers: map[string]string{checker.NameMutex: "invalid"},
		Why: fmt.Sprintf("the claim %q: %s past the %s lease may find a client holding the lock, or not", claim, fault, sc.TTL.D())}, true
}

// PastLease names the scripted fault that can leave a client holding a
// lock whose lease has run out — a pause, or replies delayed, outlasting
// the scenario's lease — ("" when none).
//
// certain says whether the fault must make a stale holder: a pause
// triggered on a step inside the critical section (on: acquire, read or
// write) freezes a holder, while a pause at a time (at:) finds the client
// holding the lock or not, and a delayed grant makes a stale holder only
// when another client asks for the lock at the right moment. A pause at
// the run's start (before any grant: the delay family holds client 1 back
// so) or after a release freezes no holder and is passed over. A fault
// that must make one is named before one that may.
func (sc *Scenario) PastLease() (fault string, certain bool) {
	ttl := sc.TTL.D()
	for _, s := range sc.Nemesis.Script {
		if s.Fault == "pause" && s.For.D() > ttl && slices.Contains(holdingEvents, s.On) {
			return fmt.Sprintf("a %s pause", s.For.D()), true
		}
	}
	for _, s := range sc.Nemesis.Script {
		if s.Fault == "pause" && s.For.D() > ttl && s.On == "" && s.At.D() > 0 {
			return fmt.Sprintf("a %s pause", s.For.D()), false
		}
		if p, ok := s.Params.(*nemesis.LatencyParams); ok && s.Fault == "latency" && p.Latency.D() > ttl && p.Topology != "members" {
			return fmt.Sprintf("a %s delay of a client's traffic", p.Latency.D()), false
		}
	}
	return "", false
}

// holdingEvents are the steps after which a client holds the lock: a pause
// triggered on one freezes a holder.
var holdingEvents = []string{history.Acquire, history.Read, history.Write}
