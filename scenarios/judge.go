package scenarios

import (
	"fmt"
	"sort"
	"strings"

	"github.com/locktorture/locktorture/checker"
)

// NoClaim is the expectation of a run judged against no claim (a program
// of the user's that states none): its verdict is reported as it came; it
// is never judged against one, so a run that ended (valid, invalid or
// unknown) is as expected, and only a harness error is not.
const NoClaim = "no claim"

// Judge compares a run's results with its expectation: the overall
// verdict (an empty expectation means valid; NoClaim takes any verdict;
// Either a valid one, or an invalid one whose expected checkers
// match) and each expected checker verdict for the checkers that ran. It
// returns whether everything matches and, when not, what differs.
func Judge(res *checker.Results, expected string, expectedCheckers map[string]string) (bool, string) {
	if res == nil {
		return false, "no results"
	}
	verdicts := map[string]string{}
	for n, v := range res.Checkers.Verdicts() {
		verdicts[n] = v.String()
	}
	return JudgeVerdicts(res.Valid.String(), verdicts, expected, expectedCheckers)
}

// JudgeVerdicts is Judge on verdicts as words (a stored cell's, when
// merge judges a shard again): the run's (valid, invalid,
// unknown) and its checkers' by name.
func JudgeVerdicts(verdict string, verdicts map[string]string, expected string, expectedCheckers map[string]string) (bool, string) {
	if expected == "" {
		expected = checker.Valid.String()
	}
	if expected == NoClaim {
		return true, ""
	}
	if expected == Either {
		// Valid or invalid, as the claim leaves open; an invalid run's
		// checkers still as expected, an unknown run not.
		switch verdict {
		case checker.Valid.String():
			return true, ""
		case checker.Invalid.String():
			expected = checker.Invalid.String()
		default:
			return false, fmt.Sprintf("expected valid or invalid (either), got %s", verdict)
		}
	}
	overall := ""
	if verdict != expected {
		overall = fmt.Sprintf("expected %s, got %s", expected, verdict)
	}
	var diffs, differing []string
	names := make([]string, 0, len(expectedCheckers))
	for n := range expectedCheckers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		got, ok := verdicts[n]
		if !ok {
			continue // the checker did not run (it does not apply to this backend)
		}
		if got != expectedCheckers[n] {
			diffs = append(diffs, fmt.Sprintf("%s: expected %s, got %s", n, expectedCheckers[n], got))
			differing = append(differing, n)
		}
	}
	switch {
	case overall != "" && len(differing) > 0:
		return false, overall + " (" + strings.Join(differing, ", ") + " too)"
	case overall != "":
		return false, overall
	}
	return len(diffs) == 0, strings.Join(diffs, "; ")
}
