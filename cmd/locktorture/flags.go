package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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
