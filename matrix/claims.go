package matrix

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/scenarios"
)

// claims finds what a plan expects of a cell from the claims themselves
// (a built-in scenario's expect block, or that of a scenario file the
// matrix's command names), never from what a shard's results.json says of
// it: a merge judges every shard's cells again with it.
type claims struct {
	// files are the scenario files the command names that load here, by
	// scenario name.
	files map[string]scenarioSource
	// unknownFiles is set when the command names a scenario file that
	// does not load here (moved, or a path relative to another
	// directory): its scenario's name is unknown, and a built-in's name
	// may be its.
	unknownFiles bool
	// cache holds the expectations found, by scenario, backend and
	// fencing.
	cache map[CellKey]expectation
}

// expectation is a cell's expectation as its claim states it, and
// whether the claim was found.
type expectation struct {
	e     scenarios.Expectation
	found bool
}

// claimsOf reads the scenario files a matrix's command names (its
// --scenarios list; compare's families are built-in).
func claimsOf(command string) *claims {
	cl := &claims{files: map[string]scenarioSource{}, cache: map[CellKey]expectation{}}
	words, err := scenarios.SplitCommand(command)
	if err != nil {
		cl.unknownFiles = true
		return cl
	}
	var lists []string
	for i, w := range words {
		for _, flag := range []string{"-scenarios", "--scenarios"} {
			switch {
			case w == flag && i+1 < len(words):
				lists = append(lists, words[i+1])
			case strings.HasPrefix(w, flag+"="):
				lists = append(lists, strings.TrimPrefix(w, flag+"="))
			}
		}
	}
	for _, list := range lists {
		for _, name := range strings.Split(list, ",") {
			name = strings.TrimSpace(name)
			if !isScenarioFile(name) {
				continue
			}
			sc, err := scenarios.LoadFile(name)
			if err != nil {
				cl.unknownFiles = true
				continue
			}
			cl.files[sc.Name] = scenarioSource{load: func() (*scenarios.Scenario, error) { return scenarios.LoadFile(name) }}
		}
	}
	return cl
}

// expect is the expectation the claims state for the cell, with found
// false when they cannot be told here: a backend that is not built in (a
// program of the user's, whose claim, if any, was given on its shard's
// command line), a scenario file that does not load here, or a pair the
// scenario does not take without the matrix's other flags.
func (cl *claims) expect(key CellKey) (scenarios.Expectation, bool) {
	k := CellKey{Scenario: key.Scenario, Backend: key.Backend, Fencing: key.Fencing}
	if e, ok := cl.cache[k]; ok {
		return e.e, e.found
	}
	e, found := cl.find(key)
	cl.cache[k] = expectation{e, found}
	return e, found
}

func (cl *claims) find(key CellKey) (scenarios.Expectation, bool) {
	if !builtinBackend(key.Backend) {
		return scenarios.Expectation{}, false
	}
	src, ok := cl.files[key.Scenario]
	if !ok {
		if cl.unknownFiles || isScenarioFile(key.Scenario) {
			return scenarios.Expectation{}, false
		}
		if _, err := scenarios.Builtin(key.Scenario); err != nil {
			return scenarios.Expectation{}, false
		}
		name := key.Scenario
		src = scenarioSource{load: func() (*scenarios.Scenario, error) { return scenarios.Builtin(name) }}
	}
	sc, err := src.load()
	if err != nil {
		return scenarios.Expectation{}, false
	}
	b, seed := key.Backend, key.Seed
	o := scenarios.Overrides{Backend: &b, Seed: &seed}
	if key.Fencing != "" {
		f := key.Fencing
		o.Fencing = &f
	}
	if err := sc.Apply(o); err != nil {
		return scenarios.Expectation{}, false
	}
	return sc.Expected(key.Backend), true
}

// builtinBackend reports whether b is a backend of this program's own,
// not a program of the user's.
func builtinBackend(b string) bool {
	_, _, err := backends.Lookup(b)
	return err == nil && !backends.IsUserProgram(b)
}

// isScenarioFile reports whether a --scenarios entry names a file (as
// Plan tells it).
func isScenarioFile(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.ContainsAny(name, `/\`)
}

// runVerdicts are the verdicts a shard's cell may carry: a run's, or a
// harness error's. "missing" is a merge's own, never a shard's.
var runVerdicts = []string{checker.Valid.String(), checker.Invalid.String(), checker.Unknown.String(), VerdictError}

// expectWords are the overall expectations a cell may carry.
var expectWords = []string{checker.Valid.String(), checker.Invalid.String(), checker.Unknown.String(), scenarios.Either, NoClaim}

// checkVerdicts refuses checker verdicts other than valid, invalid and
// unknown, or checkers this program does not have; what names them.
func checkVerdicts(what string, vs map[string]string) error {
	for _, n := range slices.Sorted(maps.Keys(vs)) {
		switch v := vs[n]; {
		case !checker.IsKnown(n):
			return fmt.Errorf("%s: unknown checker %s", what, strconv.Quote(n))
		case v != checker.Valid.String() && v != checker.Invalid.String() && v != checker.Unknown.String():
			return fmt.Errorf("%s: %s verdict %s is none of valid, invalid, unknown", what, n, strconv.Quote(v))
		}
	}
	return nil
}

// judgeShardCell checks a cell of the shard read from file against the
// plan (planned) and judges it again against its claim: a verdict or
// checker verdict that is none, or a cell no plan has, is an error naming
// the file and the cell. Its expectation is the claim's where the claims
// can tell it (a built-in backend), else the shard's own, which must be
// one; whether it is as expected is always judged here, from its
// verdicts, never taken from the shard.
func (cl *claims) judgeShardCell(file string, planned map[CellKey]bool, c *Cell) error {
	cell := strconv.Quote(c.CellKey.String())
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: cell %s: %s", ErrMatrix, file, cell, fmt.Sprintf(format, a...))
	}
	if !planned[c.CellKey] {
		return bad("no plan of this matrix has it (its plan lists %d cells, this one not among them)", len(planned))
	}
	if !slices.Contains(runVerdicts, c.Verdict) {
		return bad("verdict %s is none of %s", strconv.Quote(c.Verdict), strings.Join(runVerdicts, ", "))
	}
	if err := checkVerdicts("checkers", c.Checkers); err != nil {
		return bad("%v", err)
	}
	if e, ok := cl.expect(c.CellKey); ok {
		c.Expected = e.Valid
		if c.Expected == "" {
			c.Expected = checker.Valid.String()
		}
		if !maps.Equal(c.ExpectedCheckers, e.Checkers) {
			c.ExpectedCheckers = nil
			if len(e.Checkers) > 0 {
				c.ExpectedCheckers = maps.Clone(e.Checkers)
			}
		}
		c.ExpectedWhy = ""
		if c.Expected == scenarios.Either {
			c.ExpectedWhy = e.Why
		}
	} else {
		if c.Expected == "" {
			c.Expected = checker.Valid.String()
		}
		if !slices.Contains(expectWords, c.Expected) {
			return bad("expected %s is none of %s", strconv.Quote(c.Expected), strings.Join(expectWords, ", "))
		}
		if err := checkVerdicts("expected checkers", c.ExpectedCheckers); err != nil {
			return bad("%v", err)
		}
	}
	if c.Verdict == VerdictError {
		msg := c.Error
		if msg == "" {
			msg = "the run failed"
		}
		c.AsExpected, c.Why = false, "harness error: "+msg
		return nil
	}
	c.AsExpected, c.Why = scenarios.JudgeVerdicts(c.Verdict, c.Checkers, c.Expected, c.ExpectedCheckers)
	return nil
}
