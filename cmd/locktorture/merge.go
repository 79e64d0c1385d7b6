package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/locktorture/locktorture/internal/shell"
	"github.com/locktorture/locktorture/internal/words"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/runner"
)

func cmdMerge(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	store := fs.String("store", "store", "store `DIR`: the merged report goes to DIR/matrix/<timestamp>/")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: locktorture merge [--store DIR] MATRIX...

Joins the shards of one matrix or comparison (run with --shard i/n) into one
report, the same as a single run of the whole would give (for a comparison:
compare.html, compare.png and compare.txt too). A planned cell that no shard
ran is "missing" (red), and the merge exits 1. Each MATRIX is a shard's
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
	for _, n := range out.Notes {
		fmt.Fprintf(stderr, "locktorture merge: %s\n", n)
	}
	if out.Matrix.Compare {
		printCompare(stdout, out)
	} else {
		printMatrix(stdout, out)
	}
	printMissing(stdout, out.Matrix)
	if err != nil {
		fmt.Fprintf(stderr, "locktorture merge: %s\n", errLine(err))
		return exitHarness
	}
	return matrixExit(out.Matrix)
}

// printMissing says how many planned cells no merged shard ran, and why.
func printMissing(w io.Writer, m *matrix.Matrix) {
	n, why := 0, ""
	for _, c := range m.Cells {
		if c.Verdict == matrix.VerdictMissing {
			n, why = n+1, c.Why
		}
	}
	if n > 0 {
		fmt.Fprintf(w, "MISSING:  %s: %s\n", words.Count(n, "cell", "cells"), why)
	}
}
