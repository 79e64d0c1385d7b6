package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture/shrink"

	"github.com/locktorture/locktorture/matrix"

	"github.com/locktorture/locktorture/internal/shell"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/runner"
	"github.com/locktorture/locktorture/scenarios"
)

// startRunProgress shows a run's progress on stderr (a bar on a terminal,
// a line every few seconds otherwise) unless quiet; the returned function
// stops it.
func startRunProgress(opt *runner.Options, sc *scenarios.Scenario, stderr io.Writer, quiet bool) func() {
	if quiet {
		return func() {}
	}
	p := reports.NewProgress(stderr, 5*time.Second)
	info, _, _ := backends.Lookup(sc.Backend)
	p.StartRun(sc.Name+" / "+sc.Backend, sc.Duration.D(), !info.LockFree)
	opt.Observe = p.Observe
	if opt.Log != nil {
		opt.Log = p.Writer()
	}
	return p.Close
}

// splitList splits "a,b, c" into its non-empty words.
func splitList(s string) []string {
	var out []string
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// matrixExit is the exit code of a finished matrix: 255 when a run failed
// with a harness error, 1 when a cell differs from its expectation (or is
// missing), 0 when every cell is as expected.
func matrixExit(m *matrix.Matrix) int {
	switch {
	case m.HasErrors():
		return exitHarness
	case !m.Valid:
		return exitInvalid
	}
	return exitValid
}

// defaultParallel is how many cells a matrix runs at once unless told.
const defaultParallel = 2

func cmdMatrix(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scs := fs.String("scenarios", "", "comma-separated scenario `NAMES` or .yaml files (default: every built-in scenario)")
	bks := fs.String("backends", "", "comma-separated backend `NAMES` (default: every backend each scenario applies to)")
	seeds := fs.Int("seeds", 1, "seeds per scenario and backend: the scenario's seed, seed+1, ...")
	store := fs.String("store", "store", "store `DIR` for the runs and store/matrix/<timestamp>/")
	shard := fs.String("shard", "", "run only share `i/n` of the cells (e.g. 1/2), for splitting across CI machines; join with: locktorture merge")
	quiet := fs.Bool("quiet", false, "no progress; print only the table")
	duration := fs.Duration("duration", 0, "override every scenario's client run time (quick checks; expectations may then not hold)")
	linTimeout := fs.Duration("linearizable-timeout", 0, "time limit for the linearizability checker in each run (default 30s)")
	plan := fs.Bool("plan", false, "print the cells this matrix (or shard) would run, and exit")
	parallel := fs.Int("parallel", defaultParallel, "cells to run at once (each starts its own servers on free ports)")
	servers := fs.String("servers", "", "where every cell's servers run: local (the default) or docker")
	serversFile := fs.String("servers-file", "", "with --servers external: a YAML file naming the servers")
	clientMode := fs.String("client-mode", "", "how every cell's clients run: inproc (the default) or process (one process each)")
	doShrink := fs.Bool("shrink", false, "shrink every invalid cell whose faults were random (see locktorture shrink): shrunk.yaml and shrink.html land in its run")
	images := imageFlag(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: locktorture matrix [flags]

Runs scenarios x backends against real servers (--parallel at a time), judges each
cell against the scenario's expectation for that backend, prints a table and
writes STORE/matrix/<timestamp>/ (index.html, matrix.png, results.json,
junit.xml). Exit 0 when every cell is as expected, 1 when one is not, 255 when
a run failed with a harness error.

`)
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "locktorture matrix: unexpected argument %q\n", fs.Arg(0))
		return exitBadArgs
	}
	parallelSet := false
	fs.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "parallel" })
	if *servers == "external" && !parallelSet {
		// Cells share someone else's servers: a server fault of one cell
		// would hit the other's run. One at a time unless asked.
		*parallel = 1
	}
	if *parallel < 1 || *parallel > 64 {
		fmt.Fprintf(stderr, "locktorture matrix: --parallel must be from 1 to 64, not %d\n", *parallel)
		return exitBadArgs
	}
	if *seeds < 1 || *seeds > 1000 {
		fmt.Fprintf(stderr, "locktorture matrix: --seeds must be from 1 to 1000, not %d\n", *seeds)
		return exitBadArgs
	}
	opt := runner.MatrixOptions{
		Scenarios: splitList(*scs), Backends: splitList(*bks), Seeds: *seeds, Store: *store,
		LinearizableTimeout: *linTimeout, Command: shell.Join(append([]string{"locktorture", "matrix"}, args...)),
		Parallel: *parallel,
	}
	if *shard != "" {
		i, n, err := runner.ParseShard(*shard)
		if err != nil {
			fmt.Fprintf(stderr, "locktorture matrix: %v\n", err)
			return exitBadArgs
		}
		opt.Shard, opt.Shards = i, n
	}
	if *duration != 0 {
		if *duration < 0 {
			fmt.Fprintln(stderr, "locktorture matrix: --duration must be positive")
			return exitBadArgs
		}
		opt.Overrides.Duration = duration
		opt.RunArgs = append(opt.RunArgs, "--duration", duration.String())
	}
	if *servers != "" {
		opt.Overrides.Servers = servers
		opt.RunArgs = append(opt.RunArgs, "--servers", *servers)
	}
	if *clientMode != "" {
		opt.Overrides.ClientMode = clientMode
		opt.RunArgs = append(opt.RunArgs, "--client-mode", *clientMode)
	}
	if *serversFile != "" {
		opt.Overrides.ServersFile = serversFile
		opt.RunArgs = append(opt.RunArgs, "--servers-file", *serversFile)
	}
	if len(images) > 0 {
		opt.Overrides.Images = images
		opt.RunArgs = append(opt.RunArgs, imageArgs(images)...)
	}
	if *plan {
		share, skipped, err := runner.PlanMatrix(opt)
		if err != nil {
			fmt.Fprintf(stderr, "locktorture matrix: %v\n", err)
			return exitBadArgs
		}
		for _, k := range share {
			fmt.Fprintln(stdout, k)
		}
		for _, s := range skipped {
			fmt.Fprintf(stdout, "not applicable: %s / %s: %s\n", s.Scenario, s.Backend, s.Why)
		}
		return exitValid
	}

	var prog *reports.Progress
	if !*quiet {
		prog = reports.NewProgress(stderr, 30*time.Second)
		defer prog.Close()
		opt.Observe = prog.Observe
		// The live bar follows one run at a time (the cell the runner
		// follows); every cell prints its line as it ends, and once no
		// cell is left to start, the line says which are still running.
		started, finished := 0, 0
		running := map[int]string{}
		opt.OnCell = func(ev runner.CellEvent) {
			label := fmt.Sprintf("[%d/%d] %s / %s (seed %d)", ev.Index+1, ev.Total, ev.Key.Scenario, ev.Key.Backend, ev.Key.Seed)
			if !ev.Done {
				started++
				running[ev.Index] = label
				prog.SetCells(finished, ev.Total)
				if ev.Followed {
					prog.StartRun(label, ev.Duration, !ev.LockFree)
				}
				return
			}
			finished++
			delete(running, ev.Index)
			if ev.Followed {
				prog.EndRun()
			}
			prog.SetCells(finished, ev.Total)
			c := ev.Cell
			res := "as expected"
			switch {
			case c.Verdict == matrix.VerdictError:
				res = "HARNESS ERROR: " + c.Error
			case !c.AsExpected:
				res = "NOT as expected: " + c.Why
			}
			line := fmt.Sprintf("%s: %s, %s (%.1fs)", label, c.Verdict, res, c.Seconds)
			if ev.Dir != "" {
				line += "  " + ev.Dir
			}
			prog.Printf("%s", line)
			if ev.Followed && started == ev.Total && len(running) > 0 {
				var labels []string
				for _, i := range slices.Sorted(maps.Keys(running)) {
					labels = append(labels, running[i])
				}
				prog.Printf("still running: %s", strings.Join(labels, ", "))
			}
		}
	}
	ctx, cancel := signalContext()
	defer cancel()
	out, err := runner.RunMatrix(ctx, opt)
	prog.Close()
	if out == nil {
		return fail(stderr, "matrix", err)
	}
	printMatrix(stdout, out)
	if err != nil {
		fmt.Fprintf(stderr, "locktorture matrix: %v\n", err)
		return exitHarness
	}
	if *doShrink {
		shrinkCells(ctx, stdout, stderr, out)
	}
	return matrixExit(out.Matrix)
}

// shrinkCells shrinks each cell that carries a shrink command (invalid,
// from random faults), one after another, saying what each came to. The
// matrix's exit code stays the verdicts'.
func shrinkCells(ctx context.Context, stdout, stderr io.Writer, out *runner.MatrixOutcome) {
	for _, c := range out.Matrix.Cells {
		if c.Shrink == "" || c.Dir == "" || ctx.Err() != nil {
			continue
		}
		dir := filepath.Join(out.Dir, filepath.FromSlash(c.Dir))
		fmt.Fprintf(stdout, "shrinking %s ...\n", c.CellKey)
		res, err := shrinkDir(ctx, dir, shrink.Options{Reruns: shrink.DefaultReruns})
		if res != nil && res.Shrunk != nil {
			fmt.Fprintf(stdout, "  %s -> %s: %s\n", res.OriginalShape(), res.ShrunkShape(), filepath.Join(dir, shrink.FileShrunk))
		}
		if err != nil {
			fmt.Fprintf(stderr, "locktorture matrix: shrink %s: %v\n", c.CellKey, err)
		}
	}
}

// printMatrix prints the table and where the report is.
func printMatrix(w io.Writer, out *runner.MatrixOutcome) {
	fmt.Fprintln(w)
	fmt.Fprint(w, reports.MatrixTable(out.Matrix))
	fmt.Fprintf(w, "matrix:   %s\n", out.Dir)
	fmt.Fprintf(w, "report:   %s\n", filepath.Join(out.Dir, reports.FileIndex))
	fmt.Fprintf(w, "junit:    %s\n", filepath.Join(out.Dir, reports.FileJUnit))
}

func cmdMerge(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	store := fs.String("store", "store", "store `DIR`: the merged report goes to DIR/matrix/<timestamp>/")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: locktorture merge [--store DIR] MATRIX...

Joins the shards of one matrix (run with --shard i/n) into one report, the same
as a single run of the whole matrix would give. Each MATRIX is a shard's
matrix directory, or a store whose newest matrix is taken. Exits like matrix:
0 when every planned cell ran and is as expected.

`)
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitBadArgs
	}
	ctx, cancel := signalContext()
	defer cancel()
	out, err := runner.MergeMatrix(ctx, fs.Args(), *store, shell.Join(append([]string{"locktorture", "merge"}, args...)))
	if out == nil {
		return fail(stderr, "merge", err)
	}
	printMatrix(stdout, out)
	if err != nil {
		fmt.Fprintf(stderr, "locktorture merge: %v\n", err)
		return exitHarness
	}
	return matrixExit(out.Matrix)
}

func cmdReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: locktorture report PATH

Draws every report file of a stored run or matrix again (index.html, the plots,
linearizability.html, junit.xml; for a matrix also each of its runs) from the
store alone: history.jsonl and results.json, no servers. The same store gives
the same bytes.
`)
	}
	if code, ok := parseArgs(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitBadArgs
	}
	ctx, cancel := signalContext()
	defer cancel()
	warn := func(s string) { fmt.Fprintf(stderr, "locktorture report: warning: %s\n", s) }
	dir, isMatrix, err := runner.Report(ctx, fs.Arg(0), warn)
	if err != nil {
		return fail(stderr, "report", err)
	}
	what := "run"
	if isMatrix {
		what = "matrix (and its runs)"
	}
	fmt.Fprintf(stdout, "redrew the %s in %s\nreport:   %s\n", what, dir, filepath.Join(dir, reports.FileIndex))
	return exitValid
}
