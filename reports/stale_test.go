package reports

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

func TestSummaryStaleWindows(t *testing.T) {
	s := func(x float64) int64 { return int64(x * 1e9) }
	stale := checker.Hold{Process: 0, Key: "k0", Start: s(0.1), End: s(2.62), LeaseEnd: history.Int64(s(1.12)), LeaseMS: history.Int64(1000)}
	m := &checker.MutexResult{Valid: checker.Invalid, Holds: 5, Count: 3, StaleHolders: 2, DoubleGrants: 1}
	for i, at := range []float64{1.13, 1.5} {
		m.Violations = append(m.Violations, checker.Overlap{Key: "k0", Earlier: stale, Kind: checker.StaleHolder, Start: s(at),
			Later: checker.Hold{Process: 1 + i, Key: "k0", Start: s(at), End: s(at + 0.1)}})
	}
	m.Violations = append(m.Violations, checker.Overlap{Key: "k0", Kind: checker.DoubleGrant, Start: s(3),
		Earlier: checker.Hold{Process: 1, Key: "k0", Start: s(2.9), End: s(3.2)}, Later: checker.Hold{Process: 2, Key: "k0", Start: s(3), End: s(3.1)}})
	got := Summary(&checker.Results{Valid: checker.Invalid, Checkers: checker.Checkers{Mutex: m}}, 3)
	want := "process 0 went on holding k0 for 1.50s after its lease ran out (1.12s to 2.62s); meanwhile process 1 acquired it once, process 2 acquired it once"
	if !strings.Contains(got, want) {
		t.Errorf("summary lacks %q:\n%s", want, got)
	}
	if strings.Count(got, "went on holding") != 1 {
		t.Errorf("a double grant is not a stale window:\n%s", got)
	}
}
