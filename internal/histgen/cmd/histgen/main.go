// Command histgen writes a synthetic history of a healthy lock (see
// package histgen) as JSONL, for measuring `locktorture analyze`:
//
//	go run ./internal/histgen/cmd/histgen -ops 1000000 -clients 128 -keys 128 > /tmp/h/history.jsonl
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/histgen"
)

func main() {
	n := flag.Int("ops", 1000000, "ops to generate (before the final reads)")
	clients := flag.Int("clients", 128, "client processes")
	keys := flag.Int("keys", 128, "lock keys")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	if err := history.WriteAll(w, histgen.Realistic(*seed, *clients, *keys, *n)); err != nil {
		fmt.Fprintln(os.Stderr, "histgen:", err)
		os.Exit(1)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "histgen:", err)
		os.Exit(1)
	}
}
