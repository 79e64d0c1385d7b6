package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"
	"unsafe"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/runner"
)

// Sizes analyzeMemoryLimit reckons with.
const (
	// opBytes is what one op of a history takes in memory once read: the
	// Op itself, and its share of the decoder's blocks of values, fences
	// and leases.
	opBytes = int64(unsafe.Sizeof(history.Op{})) + 8
	// plainLine is about the longest line whose strings and values take no
	// memory of their own (they are interned, or live in those blocks):
	// longer lines carry long errors or values, held byte for byte.
	plainLine = 100
	// limitSample is how much of a history analyzeMemoryLimit reads to
	// learn its lines' length.
	limitSample = 256 << 10
	// minAnalyzeLimit is the least limit analyze sets: below it, the
	// runtime's own pacing keeps memory low enough.
	minAnalyzeLimit = 128 << 20
)

// analyzeMemoryLimit returns the soft memory limit analyze sets for the
// history that path names (a file, or a directory holding history.jsonl),
// or 0 when there is none. Near the limit the Go runtime collects harder,
// so that memory stays close to what is live: the ops in memory (estimated
// from the file's size and the length of the lines in its middle and at
// its end), and room beside them for the checkers and the plots, which at
// their peak hold about a third more. GOMEMLIMIT, when set, wins (the
// caller checks).
//
// On a 1,000,000-op history (100 MB) the limit is 216 MiB, against a live
// peak of about 186 MiB: peak RSS stays about 245 MB (330 MB with the
// runtime's own pacing) for no more CPU, the collector's extra work about
// what fewer fresh pages save the kernel.
func analyzeMemoryLimit(path string) int64 {
	file := historyFile(path)
	if st, err := os.Stat(file); err != nil || !st.Mode().IsRegular() {
		return 0 // analyze refuses it (opening a named pipe would wait for a writer)
	}
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0
	}
	size := st.Size()
	// Lines grow longer as a history goes on (its indexes and times get
	// more digits), and most of a long one has the long ones: sample its
	// middle and its end.
	var sampled, newlines int64
	buf := make([]byte, min(size, limitSample/2))
	for _, at := range []int64{(size - int64(len(buf))) / 2, size - int64(len(buf))} {
		n, _ := f.ReadAt(buf, at)
		sampled += int64(n)
		newlines += int64(bytes.Count(buf[:n], []byte{'\n'}))
	}
	if sampled == 0 {
		return 0
	}
	lines := max(1, newlines*size/sampled) // no newline: one long line
	live := opBytes*lines + max(0, size-plainLine*lines)
	return max(minAnalyzeLimit, 17<<20+live*7/5)
}

// historyFile is the history a path names: the file itself, or the
// history.jsonl in a directory.
func historyFile(path string) string {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return filepath.Join(path, "history.jsonl")
	}
	return path
}

// analyze is `locktorture analyze`, stopped early when ctx ends (Ctrl-C:
// cmdAnalyze's signalContext).
func analyze(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("analyze", flag.ContinueOnError)
	fs.SetOutput(stderr)
	linTimeout := fs.Duration("linearizable-timeout", 30*time.Second, "time limit for the linearizability checker")
	checkers := fs.String("checkers", "", "comma-separated checkers to run instead of what the directory's scenario.yaml asks for (mutex, linearizable, fencing, lost-update, stats)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: locktorture analyze [flags] PATH\n\nRe-checks a stored history with no servers. PATH is a run directory, a directory\nholding history.jsonl, or the file itself. Writes results.json beside it, redraws\nthe report (index.html, plots) and exits with the verdict's code.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitBadArgs
	}
	warn := func(s string) { fmt.Fprintf(stderr, "locktorture analyze: warning: %s\n", s) }
	var names []string
	if *checkers != "" {
		names = strings.Split(*checkers, ",")
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if limit := analyzeMemoryLimit(fs.Arg(0)); limit > 0 {
			debug.SetMemoryLimit(limit)
		}
	}
	out, err := runner.Analyze(ctx, fs.Arg(0), runner.Options{LinearizableTimeout: *linTimeout, Checkers: names}, warn)
	if out != nil {
		printOutcome(stdout, out)
	}
	if err != nil && ctx.Err() != nil {
		return analyzeInterrupted(stderr, out)
	}
	if err != nil {
		return fail(stderr, "analyze", err)
	}
	return exitCode(out.Results.Valid)
}

// analyzeInterrupted says, in one line, that analyze was interrupted
// (Ctrl-C) and what it left: the verdict printed and in results.json, the
// report cut short; or nothing. It returns the exit code, 255.
func analyzeInterrupted(stderr io.Writer, out *runner.Outcome) int {
	if out != nil && out.Results != nil {
		fmt.Fprintf(stderr, "locktorture analyze: interrupted while drawing the report: the verdict above is in %s; redraw the report with: locktorture report %s\n",
			filepath.Join(out.Dir, "results.json"), out.Dir)
		return exitHarness
	}
	fmt.Fprintln(stderr, "locktorture analyze: interrupted before its verdict: nothing written")
	return exitHarness
}
