package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/scenarios"
)

// maxWarningLines is how many contract warnings Analyze prints one by one
// before it only counts the rest (results.json lists more).
const maxWarningLines = 5

// Analyze re-checks a stored history with no servers. path is a run
// directory, any directory holding a history.jsonl, or the file itself.
//
// What the checkers run: opt.Checkers when given; else the directory's
// scenario.yaml, which must load (a malformed one is bad input, naming the
// file and line); else every checker. results.json and the report files
// (index.html, plots, junit.xml; see reports.WriteRun) are written beside
// the history.
//
// A history is judged against its contract (docs/history.md): an op that cannot
// be checked (bad JSON, a type outside invoke/ok/fail/info, a client lock op
// without a key, a value that is not an integer; see docs/history.md) is bad
// input naming its line; a broken rule the checkers can work around (see
// history.Lint) is a warning, listed in results.json. A history whose last
// line was cut off (the harness was killed) is checked without that line,
// and the results say so. A history with no op, a line longer than
// history.MaxLineBytes, or a path that is not a regular file (a named pipe,
// a device) is bad input too. warn receives the warnings.
//
// When the report fails to draw, Analyze returns the Outcome (results.json
// is written) with an error wrapping ErrReport. A panic anywhere in
// checking or drawing is an error, never a crash.
func Analyze(ctx context.Context, path string, opt Options, warn func(string)) (out *Outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: analyze failed: %v", ErrReport, r)
		}
	}()
	hpath, dir, err := historyPath(path)
	if err != nil {
		return nil, err
	}
	names, sc, err := analyzeCheckers(dir, opt.Checkers, warn)
	if err != nil {
		return nil, err
	}
	out = &Outcome{Dir: dir}
	var skipped []string
	if sc != nil {
		out.Expected = sc.Expected(sc.Backend)
		if binfo, _, err := backends.Lookup(sc.Backend); err == nil && len(opt.Checkers) == 0 {
			if len(names) == 0 {
				names = checker.All
			}
			names, skipped = applicable(names, binfo)
		}
	}
	fc, err := checkFile(ctx, hpath, names, opt, nil)
	if err != nil {
		return nil, err
	}
	res := fc.res
	truncated := fc.truncated != nil
	if res.Ops == 0 {
		why := "the history is empty"
		if truncated {
			why = "its only line is cut off"
		}
		return nil, fmt.Errorf("%w: %s holds no op to check: %s", ErrBadInput, hpath, why)
	}
	if truncated {
		warn(fmt.Sprintf("%v: dropped it and checked the %d complete ops before it", fc.truncated, res.Ops))
	}
	for i, w := range res.Warnings {
		if i == maxWarningLines {
			warn(fmt.Sprintf("… and %d more ways the history breaks its contract (see results.json)", res.WarningCount-maxWarningLines))
			break
		}
		warn("the history breaks its contract: " + w)
	}
	if sc != nil {
		res.Scenario, res.Backend, res.Resource, res.Seed = sc.Name, sc.Backend, sc.Resource, sc.Seed
		if sc.Backend == scenarios.ExecBackend {
			res.Program = sc.Exec.Program()
		}
		if len(skipped) > 0 {
			noteSkipped(res, sc.Backend, skipped)
		}
	}
	// Where the servers came from is not in the history: keep what the
	// run recorded.
	res.Servers = storedServers(dir)
	res.Library = storedLibrary(dir)
	res.Truncated = truncated
	if truncated && res.Note == "" {
		res.Note = "the history's last line was cut off and dropped"
	}
	if err := reports.WriteResults(filepath.Join(dir, "results.json"), res); err != nil {
		return nil, err
	}
	out.Results = res
	out.Summary = reports.Summary(res, 3)
	ops, long, err := reportOps(ctx, hpath, res, fc)
	if err != nil {
		return out, fmt.Errorf("%w: %w", ErrReport, err)
	}
	if err := drawReport(ctx, dir, ops, long, res, sc); err != nil {
		return out, fmt.Errorf("%w: %w", ErrReport, err)
	}
	return out, nil
}

// historyPath finds the history file and its directory from a path that
// names either. The history must be a regular file: analyze reads it twice
// and writes results.json beside it, and a named pipe with no writer would
// block it forever.
func historyPath(path string) (hpath, dir string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	hpath, dir = path, filepath.Dir(path)
	if st.IsDir() {
		dir, hpath = path, filepath.Join(path, "history.jsonl")
		if st, err = os.Stat(hpath); err != nil {
			return "", "", fmt.Errorf("%w: no history.jsonl in %s", ErrBadInput, dir)
		}
	}
	if !st.Mode().IsRegular() {
		return "", "", fmt.Errorf("%w: %s is %s, not a regular file: analyze reads a history twice and writes results.json beside it (save it to a file first)", ErrBadInput, hpath, fileKind(st.Mode()))
	}
	return hpath, dir, nil
}

// fileKind names the kind of file that is not a regular one.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "something else"
}

// analyzeCheckers decides which checkers Analyze runs: the ones named, else
// those of dir's scenario.yaml (which must load unless checkers are named),
// else none (every one).
func analyzeCheckers(dir string, named []string, warn func(string)) ([]string, *scenarios.Scenario, error) {
	for _, n := range named {
		if !checker.IsKnown(n) {
			return nil, nil, fmt.Errorf("%w: --checkers: unknown checker %q (known: %s)", ErrBadInput, n, strings.Join(checker.All, ", "))
		}
	}
	file := filepath.Join(dir, reports.FileScenario)
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return named, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	sc, err := scenarios.Parse(data, file)
	switch {
	case err == nil && len(named) > 0:
		return named, sc, nil
	case err == nil:
		return sc.Checkers, sc, nil
	case len(named) > 0:
		warn(fmt.Sprintf("ignoring %v: checking with --checkers %s", err, strings.Join(named, ",")))
		return named, nil, nil
	}
	return nil, nil, fmt.Errorf("%w: %w (or name the checkers with --checkers to analyze without it)", ErrBadInput, err)
}

// drawReport writes the report files, turning a panic into an error.
func drawReport(ctx context.Context, dir string, ops []history.Op, long *longRun, res *checker.Results, sc *scenarios.Scenario) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", reports.ErrDraw, r)
		}
	}()
	return writeRunReport(ctx, dir, ops, long, res, sc)
}

// storedServers reads where a stored run's servers came from (results.json's
// or run.json's "servers"), or nil.
func storedServers(dir string) *checker.ServerSource {
	for _, f := range []string{"results.json", "run.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		var v struct {
			Servers *checker.ServerSource `json:"servers"`
		}
		if json.Unmarshal(b, &v) == nil && v.Servers != nil {
			return v.Servers
		}
	}
	return nil
}
