package scenarios

import (
	"strings"
	"testing"
)

// TestClaimExpectation: a claim maps onto each family's expectation —
// safe: valid with every checker valid, whatever the fault; stale holder
// possible: invalid (mutex) where a pause must freeze a holder past its
// lease, either where a fault may, valid elsewhere; like:BACKEND: the
// family's expectation of that backend, none where it does not run it.
// Misspelled claims are refused.
func TestClaimExpectation(t *testing.T) {
	for _, tc := range []struct {
		claim, scenario string
		valid           string
		ok              bool
	}{
		{ClaimSafe, "pause", "valid", true},
		{ClaimSafe, "baseline", "valid", true},
		{ClaimStaleHolderPossible, "pause", "invalid", true},
		{ClaimStaleHolderPossible, "delay", Either, true},
		{ClaimStaleHolderPossible, "partition", "valid", true},
		{ClaimStaleHolderPossible, "failover", "valid", true},
		{"like:redis-token", "pause", "invalid", true},
		{"like:redis-token", "baseline", "valid", true},
		{"like:redis-token", "renew-partition", "", false},
		{"like:rueidislock", "failover", "valid", true},
	} {
		if err := CheckClaim(tc.claim); err != nil {
			t.Fatalf("%s: %v", tc.claim, err)
		}
		sc, err := Builtin(tc.scenario)
		if err != nil {
			t.Fatal(err)
		}
		e, ok := sc.ClaimExpectation(tc.claim)
		if ok != tc.ok || e.Valid != tc.valid {
			t.Errorf("%s on %s: %q (%v), want %q (%v)", tc.claim, tc.scenario, e.Valid, ok, tc.valid, tc.ok)
		}
		if e.Valid == Either && e.Why == "" {
			t.Errorf("%s on %s: either without why", tc.claim, tc.scenario)
		}
	}
	for _, bad := range []string{"", "Safe", "like:", "like:no-such-backend", "like:exec", "unsafe"} {
		if err := CheckClaim(bad); err == nil || !strings.Contains(err.Error(), "claim") {
			t.Errorf("%q: %v, want refused", bad, err)
		}
	}
}
