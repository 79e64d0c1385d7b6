package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/locktorture/locktorture/clientprotocol"
)

// cmdClient is `locktorture client`: one client process of a run in
// client_mode process. It speaks the client protocol on stdin and stdout
// (docs/client-protocol.md) and runs the built-in backend its harness
// names in LOCKTORTURE_CLIENT; it is not meant to be run by hand.
func cmdClient(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "locktorture client: takes no arguments (the harness starts it; see docs/client-protocol.md)\n")
		return exitBadArgs
	}
	raw := os.Getenv(clientprotocol.ConfigEnv)
	if raw == "" {
		fmt.Fprintf(stderr, "locktorture client: %s is not set: the harness starts this command (client_mode: process)\n", clientprotocol.ConfigEnv)
		return exitBadArgs
	}
	var cfg clientprotocol.ChildConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintf(stderr, "locktorture client: %s: %v\n", clientprotocol.ConfigEnv, err)
		return exitBadArgs
	}
	if err := clientprotocol.Serve(context.Background(), os.Stdin, stdout, cfg); err != nil {
		fmt.Fprintf(stderr, "locktorture client: %v\n", err)
		return exitHarness
	}
	return exitValid
}
