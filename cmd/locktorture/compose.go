package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/external"
	"github.com/locktorture/locktorture/internal/atomicfile"
)

// cmdCompose writes docker-compose.yml and compose.servers.yaml — the
// standing cluster of every registered kind of server — into a directory.
func cmdCompose(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compose", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "the `DIR` to write docker-compose.yml and compose.servers.yaml into")
	images := imageFlag(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: locktorture compose [--dir DIR] [--image KIND=REF]...\n\n"+
			"Write docker-compose.yml (servers of every kind on 127.0.0.1) and compose.servers.yaml\n"+
			"(for --servers external --servers-file) into DIR. --image sets a kind's default image.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitValid
		}
		return exitBadArgs
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "locktorture compose: unexpected argument %q\n", fs.Arg(0))
		return exitBadArgs
	}
	if err := cluster.CheckImages(images); err != nil {
		fmt.Fprintf(stderr, "locktorture compose: --image: %v\n", err)
		return exitBadArgs
	}
	compose, servers, err := external.ComposeFiles(images)
	if err != nil {
		fmt.Fprintf(stderr, "locktorture compose: %v\n", err)
		return exitHarness
	}
	for name, text := range map[string]string{"docker-compose.yml": compose, "compose.servers.yaml": servers} {
		if err := writeComposeFile(filepath.Join(*dir, name), text); err != nil {
			fmt.Fprintf(stderr, "locktorture compose: %v\n", err)
			return exitHarness
		}
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(*dir, "docker-compose.yml"), filepath.Join(*dir, "compose.servers.yaml"))
	return exitValid
}

// writeComposeFile writes one file, whole or not at all.
func writeComposeFile(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, []byte(text))
}
