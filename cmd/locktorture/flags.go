package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

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
	fs.Usage = usage
	return 0, true
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
