package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/findings"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/atomicfile"
	"github.com/locktorture/locktorture/internal/shell"
	"github.com/locktorture/locktorture/runner"
)

// listFindings writes one finding a line, its id first (no header: a
// script takes the first word of each line).
func listFindings(w io.Writer) {
	for _, f := range findings.All() {
		fmt.Fprintln(w, f.Line())
	}
}

// cmdRepro runs one finding's scenario: exit 1 when it reproduces (the
// run is invalid), 0 when it no longer does, 2 when the run could not
// decide, 254 for an unknown id.
func cmdRepro(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("repro", flag.ContinueOnError)
	fs.SetOutput(stderr)
	store := fs.String("store", "store", "store `DIR` for the run")
	seed := fs.Int64("seed", 0, "random seed (default: the finding's first)")
	quiet := fs.Bool("quiet", false, "print only the summary")
	report := fs.Bool("report", false, "when it reproduces, write an issue text ready to file upstream ("+reportFile+" in the run's directory) and print its path")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: locktorture repro ID [--store DIR] [--seed N] [--report]\n\nRuns a finding (locktorture list findings; docs/findings.md) once against real\nservers. Exit 1 when it reproduces, 0 when it no longer does, 2 when the run\ncould not decide, 254 for an unknown id, 255 when the harness failed.\nWith --report, a run that reproduces writes %s in its directory: the\nissue text for the library's maintainers (docs/findings.md).\n\n", reportFile)
		fs.PrintDefaults()
	}
	f, code, ok := findingArg(fs, args, "repro", stderr)
	if !ok {
		return code
	}
	sc, err := f.Load(*seed)
	if err != nil {
		fmt.Fprintf(stderr, "locktorture repro: %v\n", err)
		return exitBadArgs
	}
	ctx, cancel := signalContext()
	defer cancel()
	parts := []string{"locktorture", "repro", f.ID, "--seed", fmt.Sprint(sc.Seed)}
	if *store != "store" {
		parts = append(parts, "--store", *store)
	}
	opt := runner.Options{Store: *store, Command: shell.Join(parts)}
	if !*quiet {
		opt.Log = stderr
	}
	fmt.Fprintf(stdout, "finding %s (%s): %s %s — %s\n", f.ID, f.Class(), f.Library, f.Version(), f.Breaks)
	if p := f.ScenarioPath(); p != "" {
		// The finding's own file (from the repository's root).
		fmt.Fprintf(stdout, "run:      locktorture run --scenario-file %s --seed %d\n", p, sc.Seed)
	} else {
		fmt.Fprintf(stdout, "run:      locktorture run --scenario %s --backend %s%s --seed %d\n", f.Scenario, f.Backend, fencingFlag(f.Fencing), sc.Seed)
	}
	out, err := runner.Run(ctx, sc, opt)
	if out != nil {
		printOutcome(stdout, out)
		fmt.Fprintf(stdout, "repeat:   %s\n", opt.Command)
	}
	if err != nil {
		return fail(stderr, "repro", err)
	}
	switch out.Results.Valid {
	case checker.Invalid:
		fmt.Fprintf(stdout, "finding %s: REPRODUCED (seed %d)\n", f.ID, sc.Seed)
		ops := readOps(filepath.Join(out.Dir, "history.jsonl"))
		if m := out.Results.Checkers.Mutex; m != nil && len(m.Violations) > 0 {
			ov := m.Violations[0]
			fmt.Fprintf(stdout, "first violation: %s\n", ov.Description)
			if ov.Kind != checker.StaleHolder {
				// A double grant: both leases were valid, no signal was due.
			} else if s := findings.Signal(ops, ov); s != "" {
				fmt.Fprintf(stdout, "signal:   %s\n", s)
			}
		}
		if *report {
			p, err := writeReport(f, out, ops, sc.Seed, opt.Command)
			if err != nil {
				fmt.Fprintf(stderr, "locktorture repro: --report: %v\n", err)
				return exitHarness
			}
			fmt.Fprintf(stdout, "issue:    %s\n", p)
		}
		return exitInvalid
	case checker.Valid:
		fmt.Fprintf(stdout, "finding %s: no longer reproduces (seed %d): the run is valid — has the library changed? (docs/findings.md)\n", f.ID, sc.Seed)
		if *report {
			fmt.Fprintln(stdout, "issue:    none written: there is nothing to report when it does not reproduce")
		}
		return exitValid
	}
	fmt.Fprintf(stdout, "finding %s: undecided (seed %d): the run's verdict is unknown\n", f.ID, sc.Seed)
	return exitUnknown
}

// reportFile is the issue text repro --report writes in the run's directory.
const reportFile = "issue.md"

// writeReport writes the finding's issue text for the run out into the
// run's directory and returns its path.
func writeReport(f findings.Finding, out *runner.Outcome, ops []history.Op, seed int64, command string) (string, error) {
	in := findings.ReportInput{Results: out.Results, Ops: ops, Seed: seed, Command: command, Version: f.Version()}
	if r := out.Results; r != nil && r.Library != nil && r.Library.Version != "" {
		in.Version = r.Library.Version
	}
	in.FirstVersion, in.Bisect = findings.FirstVersion(f.ID)
	p := filepath.Join(out.Dir, reportFile)
	if err := atomicfile.Write(p, []byte(f.Report(in))); err != nil {
		return "", err
	}
	return p, nil
}

// findingArg parses a finding command's flags and its one finding id,
// which may come before or after the flags, and looks the finding up; a
// problem is one line on stderr and exit 254.
func findingArg(fs *flag.FlagSet, args []string, cmd string, stderr io.Writer) (findings.Finding, int, bool) {
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if code, ok := parseArgs(fs, args, stderr); !ok {
		return findings.Finding{}, code, false
	}
	rest := fs.Args()
	if id == "" && len(rest) > 0 {
		id, rest = rest[0], rest[1:]
	}
	if id == "" || len(rest) > 0 {
		fmt.Fprintf(stderr, "locktorture %s: give one finding id (see: locktorture list findings)\n", cmd)
		return findings.Finding{}, exitBadArgs, false
	}
	f, err := findings.Lookup(id)
	if err != nil {
		fmt.Fprintf(stderr, "locktorture %s: %v\n", cmd, err)
		return findings.Finding{}, exitBadArgs, false
	}
	return f, 0, true
}

func fencingFlag(mode string) string {
	if mode == "" {
		return ""
	}
	return " --fencing " + mode
}

// readOps reads a stored history, or nothing when it cannot.
func readOps(path string) []history.Op {
	fh, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer fh.Close()
	ops, _ := history.ReadAll(fh)
	return ops
}
