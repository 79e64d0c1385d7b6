package runner

import (
	"context"
	"errors"
	"fmt"
	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"os"
	"path/filepath"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/scenarios"
)

// Analyze re-checks a stored history with no servers. path is a run
// directory, any directory holding a history.jsonl, or the file itself.
// The directory's scenario.yaml, when present, says which checkers to run.
// results.json and the report files (index.html, plots, junit.xml; see
// reports.WriteRun) are written beside the history. A history whose last line was
// cut off (the harness was killed) is checked without that line, and the
// results say so. warn receives non-fatal remarks.
func Analyze(ctx context.Context, path string, opt Options, warn func(string)) (*Outcome, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	hpath, dir := path, filepath.Dir(path)
	if st.IsDir() {
		dir, hpath = path, filepath.Join(path, "history.jsonl")
	}
	if _, err := os.Stat(hpath); err != nil {
		return nil, fmt.Errorf("%w: no history.jsonl in %s", ErrBadInput, dir)
	}
	ops, err := history.ReadFile(hpath)
	truncated := false
	if err != nil {
		if !errors.Is(err, history.ErrTruncated) {
			return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
		}
		truncated = true
		warn(fmt.Sprintf("%v: dropped it and checked the %d complete ops before it", err, len(ops)))
	}
	if err := history.Validate(ctx, ops); err != nil {
		// Check what is there anyway, as Jepsen would, but say so.
		warn(fmt.Sprintf("the history breaks the format (%v); checking it anyway", err))
	}
	out := &Outcome{Dir: dir}
	var names []string
	var sc *scenarios.Scenario
	if data, err := os.ReadFile(filepath.Join(dir, "scenario.yaml")); err == nil {
		if sc, err = scenarios.Parse(data, filepath.Join(dir, "scenario.yaml")); err != nil {
			warn(fmt.Sprintf("ignoring %v; running every checker", err))
			sc = nil
		} else {
			names = sc.Checkers
			out.Expected = sc.Expected(sc.Backend)
		}
	}
	var skipped []string
	if sc != nil {
		if binfo, _, err := backends.Lookup(sc.Backend); err == nil {
			if len(names) == 0 {
				names = checker.All
			}
			names, skipped = applicable(names, binfo)
		}
	}
	res, err := check(ctx, ops, names, opt)
	if err != nil {
		return nil, err
	}
	if sc != nil {
		res.Scenario, res.Backend, res.Resource, res.Seed = sc.Name, sc.Backend, sc.Resource, sc.Seed
		if len(skipped) > 0 {
			noteSkipped(res, sc.Backend, skipped)
		}
	}
	res.Truncated = truncated
	if truncated && res.Note == "" {
		res.Note = "the history's last line was cut off and dropped"
	}
	if err := reports.WriteResults(filepath.Join(dir, "results.json"), res); err != nil {
		return nil, err
	}
	if err := writeRunReport(ctx, dir, ops, res, sc); err != nil {
		warn(fmt.Sprintf("report: %v", err))
	}
	out.Results = res
	out.Summary = reports.Summary(res, 3)
	return out, nil
}
