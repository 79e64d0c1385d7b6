package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/runner"
)

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
