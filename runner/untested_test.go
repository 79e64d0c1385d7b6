package runner

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
)

// untestedNotes are what a run's note says when its scripted faults did
// not test the lock (noteMissed, noteIdle, noteUnexercised): the run is
// unknown because the machine was too slow for its story (a Sentinel's
// promotion after the clients' last acquire), not because of the lock.
var untestedNotes = []string{"a planned fault was not put to the test", "planned fault(s) that did nothing", "never happened"}

// untested reports whether out is unknown only because its faults did
// not test the lock: a test that wants a definite verdict runs it again.
func untested(out *Outcome) bool {
	if out.Results.Valid != checker.Unknown {
		return false
	}
	for _, n := range untestedNotes {
		if strings.Contains(out.Results.Note, n) {
			return true
		}
	}
	return false
}

// untestedTries is how many times a test runs a scenario whose run came
// out untested before it takes the verdict it has.
const untestedTries = 3

// runTested runs a scenario with run until it comes out other than
// untested, at most untestedTries times, logging each untested try; a
// scenario expected to be unknown is run once.
func runTested(t *testing.T, expected string, run func() *Outcome) *Outcome {
	t.Helper()
	out := run()
	for try := 2; try <= untestedTries && expected != "unknown" && untested(out); try++ {
		t.Logf("try %d of %d: the run did not test its story (%s); running it again", try-1, untestedTries, out.Results.Note)
		out = run()
	}
	return out
}
