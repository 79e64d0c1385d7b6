package reports

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
)

// TestLowAvailability: a key without a holder for half the run or more is
// named in the stats line — as low availability when clients were refused
// it, as the clients' own pace when they were not; a busy key is not.
func TestLowAvailability(t *testing.T) {
	tests := []struct {
		name string
		in   []checker.KeyAvailability
		want string // "" = nothing said
		not  string // must not be said
	}{
		{"no keys", nil, "", ""},
		{"busy", []checker.KeyAvailability{{Key: "k0", Holds: 90, Fraction: 0.2}}, "", ""},
		{"collapsed", []checker.KeyAvailability{{Key: "k0", Holds: 3, Fraction: 0.82, RefusedFraction: 0.7}},
			"low availability: k0 had no holder 82% of the run (3 holds), 70% while clients asked for it and were refused or got no answer", ""},
		{"the worst of several", []checker.KeyAvailability{{Key: "k0", Holds: 40, Fraction: 0.1}, {Key: "k1", Holds: 1, Fraction: 0.97, RefusedFraction: 0.9}},
			"low availability: k1 had no holder 97% of the run (1 hold, the worst of 2 keys)", ""},
		{"a calm run of slow clients", []checker.KeyAvailability{{Key: "k0", Holds: 120, Fraction: 0.56, RefusedFraction: 0.03}},
			"k0 had no holder 56% of the run (120 holds): the clients' own pace between a release and their next acquire, not refusals (refused 3%)", "low availability"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := lowAvailability(tc.in)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) || tc.not != "" && strings.Contains(got, tc.not) {
				t.Errorf("lowAvailability = %q, want %q", got, tc.want)
			}
		})
	}
	res := &checker.Results{Valid: checker.Valid, Checkers: checker.Checkers{Stats: &checker.StatsResult{Valid: checker.Valid, Holds: 3,
		Availability: []checker.KeyAvailability{{Key: "k0", Holds: 3, Fraction: 0.82, RefusedFraction: 0.8}}}}}
	if s := Summary(res, 5); !strings.Contains(s, "low availability: k0") {
		t.Errorf("the summary does not show the collapse:\n%s", s)
	}
}
