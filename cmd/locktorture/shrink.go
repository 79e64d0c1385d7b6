package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/locktorture/locktorture/internal/shell"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/runner"
	"github.com/locktorture/locktorture/shrink"
)

func cmdShrink(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shrink", flag.ContinueOnError)
	fs.SetOutput(stderr)
	reruns := fs.Int("reruns", shrink.DefaultReruns, "runs of each candidate; it is kept only if every one fails")
	checkerName := fs.String("checker", "", "the checker that must fail (default: the run's first failing checker)")
	quiet := fs.Bool("quiet", false, "no progress line")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: locktorture shrink [flags] RUN\n\nShrinks a failing stored run (e.g. store/latest) to the smallest scenario that\nstill fails: its recorded faults become a script, then faults, clients, keys,\nrun time and fault lengths are cut while every re-run still fails. Writes\nshrunk.yaml, shrink.html and shrink.log into RUN.\n\n")
		fs.PrintDefaults()
	}
	// Flags may come before or after RUN.
	var pos []string
	for rest := args; ; {
		if code, ok := parseArgs(fs, rest, stderr); !ok {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		pos, rest = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitBadArgs
	}
	if *reruns < 1 {
		fmt.Fprintf(stderr, "locktorture shrink: --reruns must be 1 or more, not %d\n", *reruns)
		return exitBadArgs
	}
	dir := pos[0]
	if _, err := shrink.Load(dir); err != nil {
		return fail(stderr, "shrink", err)
	}
	ctx, cancel := signalContext()
	defer cancel()
	opt := shrink.Options{Reruns: *reruns, Checker: *checkerName}
	stop := func() {}
	if !*quiet && reports.IsTerminal(stderr) {
		opt.Progress, stop = shrinkProgress(stderr)
	}
	res, err := shrinkDir(ctx, dir, opt)
	stop()
	if res != nil && res.Shrunk != nil {
		printShrink(stdout, dir, res)
	}
	var werr *shrinkWriteError
	if errors.As(err, &werr) {
		return fail(stderr, "shrink", werr.err)
	}
	switch {
	case err == nil:
		return exitValid
	case errors.Is(err, shrink.ErrNotReproduced):
		fmt.Fprintf(stderr, "locktorture shrink: %v\n", err)
		return exitUnknown
	case errors.Is(err, runner.ErrInterrupted) && (res == nil || res.Shrunk == nil):
		return fail(stderr, "shrink", fmt.Errorf("%w (no candidate had failed every re-run yet: nothing written)", err))
	case errors.Is(err, runner.ErrInterrupted):
		return fail(stderr, "shrink", fmt.Errorf("%w; the smallest failing scenario so far is in %s", err, filepath.Join(dir, shrink.FileShrunk)))
	}
	return fail(stderr, "shrink", err)
}

// shrinkWriteError is a failure to write a shrink's files.
type shrinkWriteError struct{ err error }

func (e *shrinkWriteError) Error() string { return e.err.Error() }
func (e *shrinkWriteError) Unwrap() error { return e.err }

// shrinkDir shrinks the run in dir (see shrink.Shrink), logging every
// candidate to dir/shrink.log, and writes shrunk.yaml and shrink.html for
// the best scenario found — also when interrupted.
//
// The log is written beside, and takes shrink.log's place only with the
// shrunk.yaml it explains: a shrink that writes no scenario (interrupted
// early, not reproduced) leaves an earlier shrink's shrunk.yaml and
// shrink.log as they were, its own log as shrink-last.log.
func shrinkDir(ctx context.Context, dir string, opt shrink.Options) (*shrink.Result, error) {
	logf, err := os.CreateTemp(dir, ".shrink-*.log")
	if err != nil {
		return nil, &shrinkWriteError{err}
	}
	defer os.Remove(logf.Name()) // once renamed, this removes nothing
	opt.Log = logf
	res, err := shrink.Shrink(ctx, dir, opt)
	cerr := logf.Close()
	logPath := filepath.Join(dir, shrink.FileLog)
	if res != nil && res.Shrunk != nil {
		if werr := writeShrink(dir, res, err != nil); werr != nil {
			return res, &shrinkWriteError{werr}
		}
	} else if _, serr := os.Stat(filepath.Join(dir, shrink.FileShrunk)); serr == nil {
		logPath = filepath.Join(dir, "shrink-last.log")
	}
	if cerr == nil {
		cerr = os.Chmod(logf.Name(), 0o644)
	}
	if cerr == nil {
		cerr = os.Rename(logf.Name(), logPath)
	}
	if cerr != nil {
		return res, &shrinkWriteError{cerr}
	}
	return res, err
}

// shrinkProgress redraws one status line on a terminal: the phase,
// candidates and runs so far, the best scenario and the time spent.
func shrinkProgress(w io.Writer) (func(shrink.Progress), func()) {
	var mu sync.Mutex
	var last shrink.Progress
	start := time.Now()
	draw := func() {
		best := "none yet"
		if last.Best != nil {
			best = last.Best.String()
		}
		fmt.Fprintf(w, "\r\033[Kshrink: %s · %d candidates, %d runs · best: %s · %s", last.Phase, last.Candidates, last.Runs, best, time.Since(start).Round(time.Second))
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				mu.Lock()
				draw()
				mu.Unlock()
			}
		}
	}()
	update := func(p shrink.Progress) {
		mu.Lock()
		defer mu.Unlock()
		last = p
		draw()
	}
	stop := func() {
		close(done)
		<-stopped
		fmt.Fprint(w, "\r\033[K")
	}
	return update, stop
}

// writeShrink writes shrunk.yaml and shrink.html into the run's directory.
func writeShrink(dir string, res *shrink.Result, interrupted bool) error {
	y, err := res.Shrunk.Marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, shrink.FileShrunk), y, 0o644); err != nil {
		return fmt.Errorf("shrink: %w", err)
	}
	info := reports.ShrinkInfo{
		Scenario: res.Original.Name, Backend: res.Original.Backend, Dir: dir, Seed: res.Original.Seed,
		Checker: res.Checker, Reruns: res.Reruns,
		OriginalShape: res.OriginalShape().String(), ShrunkShape: res.ShrunkShape().String(),
		OriginalOps: res.OriginalOps, OriginalResults: res.OriginalResults,
		ShrunkOps: res.ShrunkOps, ShrunkResults: res.ShrunkResults,
		Steps: res.StepLines(), YAML: string(y), Command: reproduceCommand(dir),
		Search:      fmt.Sprintf("%d candidates, %d runs, %s", res.Candidates, res.Runs, res.Elapsed.Round(time.Second)),
		Interrupted: interrupted,
	}
	for i, rec := range res.Faults {
		info.Faults = append(info.Faults, reports.ShrinkFault{Step: shrink.StepLine(rec.Step), Kept: res.IsKept(i)})
	}
	return reports.WriteShrink(dir, info)
}

func reproduceCommand(dir string) string {
	return shell.Join([]string{"locktorture", "run", "--scenario-file", filepath.Join(dir, shrink.FileShrunk)})
}

func printShrink(w io.Writer, dir string, res *shrink.Result) {
	fmt.Fprintf(w, "shrunk:   %s -> %s (%s failed on each of %d runs)\n", res.OriginalShape(), res.ShrunkShape(), res.Checker, res.Reruns)
	for _, l := range res.StepLines() {
		fmt.Fprintf(w, "          %s\n", l)
	}
	fmt.Fprintf(w, "search:   %d candidates, %d runs, %s\n", res.Candidates, res.Runs, res.Elapsed.Round(time.Second))
	fmt.Fprintf(w, "scenario: %s\n", filepath.Join(dir, shrink.FileShrunk))
	fmt.Fprintf(w, "report:   %s\n", filepath.Join(dir, shrink.FileHTML))
	fmt.Fprintf(w, "repeat:   %s\n", strings.TrimSpace(reproduceCommand(dir)))
}
