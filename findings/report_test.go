package findings

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
)

// TestReportEveryFinding: each finding's issue text has its title, class,
// upstream's words quoted with their link, the run's numbers and first
// violation, the command, the servers and, for a Go library, either its
// first version or how to find it; a finding with a reproducer program
// carries it whole.
func TestReportEveryFinding(t *testing.T) {
	ov := checker.Overlap{Key: "k0", Kind: checker.DoubleGrant, Description: "process 0 held k0 until 6.50s, but process 1 acquired k0 at 2.54s"}
	res := &checker.Results{Valid: checker.Invalid, Scenario: "s", Backend: "b", Ops: 30,
		Checkers: checker.Checkers{Mutex: &checker.MutexResult{Valid: checker.Invalid, Holds: 2, Count: 1, DoubleGrants: 1, Violations: []checker.Overlap{ov}}},
		Servers:  &checker.ServerSource{Mode: "local", Versions: map[string]string{"redis-a": "7.0.15", "redis-b": "7.0.15"}},
		Library:  &checker.Library{Name: "example.com/lib", Version: "v1.2.3", Language: "Go"}}
	for _, f := range All() {
		t.Run(f.ID, func(t *testing.T) {
			r := f.Report(ReportInput{Results: res, Seed: 1, Command: "locktorture repro " + f.ID + " --seed 1", Version: "v1.2.3"})
			ev := f.Evidence()
			want := []string{"# " + f.Library + " v1.2.3: " + f.Breaks, "Class: " + string(ev.Class), "> " + ev.Words, ev.Source,
				"the run is **invalid**", "1 double grant", ov.Description, "locktorture repro " + f.ID + " --seed 1", "- redis-a, redis-b: 7.0.15"}
			if f.Module != "" {
				want = append(want, "locktorture bisect "+f.ID)
			}
			if src, file := f.Reproducer(); src != "" {
				want = append(want, file, src)
				if n := strings.Count(src, "\n"); n >= 100 {
					t.Errorf("%s: %d lines, want under 100", file, n)
				}
			}
			for _, w := range want {
				if !strings.Contains(r, w) {
					t.Errorf("report lacks %q:\n%s", w, r)
				}
			}
		})
	}
}
