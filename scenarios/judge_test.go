package scenarios

import (
	"testing"

	"github.com/locktorture/locktorture/checker"
)

func TestJudge(t *testing.T) {
	res := func(v checker.Validity, mutex, lost checker.Validity) *checker.Results {
		return &checker.Results{Valid: v, Checkers: checker.Checkers{
			Mutex:      &checker.MutexResult{Valid: mutex},
			LostUpdate: &checker.LostUpdateResult{Valid: lost},
		}}
	}
	for _, tc := range []struct {
		name     string
		res      *checker.Results
		expected string
		checkers map[string]string
		ok       bool
		why      string
	}{
		{"valid as expected", res(checker.Valid, checker.Valid, checker.Valid), "valid", nil, true, ""},
		{"no expectation means valid", res(checker.Valid, checker.Valid, checker.Valid), "", nil, true, ""},
		{"no expectation, invalid", res(checker.Invalid, checker.Invalid, checker.Valid), "", nil, false, "expected valid, got invalid"},
		{"invalid as expected", res(checker.Invalid, checker.Invalid, checker.Invalid), "invalid", map[string]string{"mutex": "invalid", "lost-update": "invalid"}, true, ""},
		{"a checker differs", res(checker.Invalid, checker.Invalid, checker.Valid), "invalid", map[string]string{"mutex": "invalid", "lost-update": "invalid"}, false, "lost-update: expected invalid, got valid"},
		{"verdict and checkers differ", res(checker.Valid, checker.Valid, checker.Valid), "invalid", map[string]string{"mutex": "invalid"}, false, "expected invalid, got valid (mutex too)"},
		{"expected checker did not run", res(checker.Invalid, checker.Invalid, checker.Valid), "invalid", map[string]string{"fencing": "valid"}, true, ""},
		{"unknown is not valid", res(checker.Unknown, checker.Valid, checker.Valid), "valid", nil, false, "expected valid, got unknown"},
		{"no results", nil, "valid", nil, false, "no results"},
		{"no claim takes invalid", res(checker.Invalid, checker.Invalid, checker.Invalid), NoClaim, nil, true, ""},
		{"no claim takes unknown", res(checker.Unknown, checker.Valid, checker.Valid), NoClaim, nil, true, ""},
		{"no claim, no results", nil, NoClaim, nil, false, "no results"},
		{"either takes valid", res(checker.Valid, checker.Valid, checker.Valid), Either, map[string]string{"mutex": "invalid"}, true, ""},
		{"either takes invalid as its checkers say", res(checker.Invalid, checker.Invalid, checker.Invalid), Either, map[string]string{"mutex": "invalid"}, true, ""},
		{"either, an invalid checker differs", res(checker.Invalid, checker.Valid, checker.Invalid), Either, map[string]string{"mutex": "invalid"}, false, "mutex: expected invalid, got valid"},
		{"either is not unknown", res(checker.Unknown, checker.Valid, checker.Valid), Either, nil, false, "expected valid or invalid (either), got unknown"},
		{"either, no results", nil, Either, nil, false, "no results"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := Judge(tc.res, tc.expected, tc.checkers)
			if ok != tc.ok || why != tc.why {
				t.Errorf("Judge = %v, %q; want %v, %q", ok, why, tc.ok, tc.why)
			}
		})
	}
}
