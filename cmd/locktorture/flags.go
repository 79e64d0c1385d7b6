package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/locktorture/locktorture/runner"
)

// parseArgs parses a command's flags. --help prints the command's usage
// (exit 0); a bad flag is one line and a hint (exit 254), not the whole
// usage. ok is false when the command should exit with code.
func parseArgs(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return exitValid, false
	case err != nil:
		fmt.Fprintf(stderr, "locktorture %s: %v (see: locktorture %s --help)\n", fs.Name(), err, fs.Name())
		return exitBadArgs, false
	}
	if err := checkTimeLimits(fs); err != nil {
		fmt.Fprintf(stderr, "locktorture %s: %v (see: locktorture %s --help)\n", fs.Name(), err, fs.Name())
		return exitBadArgs, false
	}
	fs.Usage = usage
	return 0, true
}

// timeLimits are the duration flags, of whichever command has them, that
// bound how long something may take: given, each must be above zero (a
// limit of no time is no limit anyone asks for; it used to mean the
// default, silently).
var timeLimits = []string{"linearizable-timeout"}

// checkTimeLimits refuses a time limit flag (timeLimits) given as zero
// or less.
func checkTimeLimits(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok || err != nil || !slices.Contains(timeLimits, f.Name) {
			return
		}
		if d, ok := g.Get().(time.Duration); ok && d <= 0 {
			err = fmt.Errorf("--%s must be more than 0, not %s", f.Name, f.Value)
		}
	})
	return err
}

// fail prints a command's error on one line and returns its exit code:
// 254 for bad input, 255 for anything else (the harness failed).
func fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "locktorture %s: %v\n", cmd, err)
	if errors.Is(err, runner.ErrBadInput) {
		return exitBadArgs
	}
	return exitHarness
}
