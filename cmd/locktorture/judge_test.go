package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/runner"
	"github.com/locktorture/locktorture/scenarios"
)

// TestRunJudgesAsTheMatrixDoes: run's "expected" line weighs each checker
// the scenario expects, as a matrix cell does — an overall verdict that
// matches while fencing and lost-update do not is NOT as expected.
func TestRunJudgesAsTheMatrixDoes(t *testing.T) {
	res := func(fencing checker.Validity) *checker.Results {
		return &checker.Results{Valid: checker.Invalid, Checkers: checker.Checkers{
			Mutex:      &checker.MutexResult{Valid: checker.Invalid},
			Fencing:    &checker.FencingResult{Valid: fencing},
			LostUpdate: &checker.LostUpdateResult{Valid: fencing},
		}}
	}
	e := scenarios.Expectation{Valid: "invalid", Checkers: map[string]string{"mutex": "invalid", "fencing": "valid", "lost-update": "valid"}}
	cases := []struct {
		res  *checker.Results
		want string
	}{
		{res(checker.Valid), "expected: invalid (fencing valid, lost-update valid, mutex invalid) — as expected"},
		{res(checker.Invalid), "expected: invalid (fencing valid, lost-update valid, mutex invalid) — NOT as expected: fencing: expected valid, got invalid; lost-update: expected valid, got invalid"},
	}
	for _, c := range cases {
		var b bytes.Buffer
		printOutcome(&b, &runner.Outcome{Results: c.res, Expected: e, Dir: t.TempDir()})
		if !strings.Contains(b.String(), c.want+"\n") {
			t.Errorf("printed:\n%s\nwant the line %q", b.String(), c.want)
		}
	}
}

// TestRunOverrideLeavesExpectationUnjudged: --fencing none on a scenario
// whose expectation is about fencing all says the expectation was not
// judged, never "as expected".
func TestRunOverrideLeavesExpectationUnjudged(t *testing.T) {
	requireRedis(t)
	store := t.TempDir()
	code, out, stderr := runCLI(t, "run", "--scenario", "kleppmann-fenced", "--fencing", "none", "--store", store, "--quiet")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (invalid)\n%s\n%s", code, out, stderr)
	}
	if strings.Contains(out, "as expected") || !strings.Contains(out, "expected: not judged") || !strings.Contains(out, "--fencing none") {
		t.Errorf("want the expectation not judged, naming --fencing none:\n%s", out)
	}
}

// TestClientCheckArguments: client-check without a program, or with a
// kind of server it cannot start, is refused (254) in one line.
func TestClientCheckArguments(t *testing.T) {
	for _, args := range [][]string{
		{"client-check"},
		{"client-check", "--exec", "/usr/bin/python3 a.py", "--servers", "mongodb"},
		{"client-check", "--exec", "/usr/bin/python3 a.py", "extra"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != exitBadArgs || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, "client-check") {
			t.Errorf("%v: exit %d, stderr %q: want 254 and one line", args, code, stderr)
		}
	}
}
