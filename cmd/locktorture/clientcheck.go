package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/clientprotocol"
	"github.com/locktorture/locktorture/clients"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/scenarios"
)

// cmdClientCheck is `locktorture client-check --exec CMD`: it drives an
// adapter through the corners of the client protocol against real
// servers and says in plain words each rule it breaks. Exit 0 when it
// kept every rule, 1 when it broke one, 254 for bad arguments, 255 when
// the check could not run or was interrupted (Ctrl-C: no verdict).
// stringAlias is a second flag name for a string flag.
type stringAlias struct{ p *string }

func (a stringAlias) String() string {
	if a.p == nil {
		return ""
	}
	return *a.p
}

func (a stringAlias) Set(v string) error { *a.p = v; return nil }

func cmdClientCheck(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := signalContext()
	defer cancel()
	return clientCheck(ctx, args, stdout, stderr)
}

// clientCheck is `locktorture client-check`, stopped when ctx ends.
func clientCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("client-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	execCmd := fs.String("exec", "", "the adapter: `COMMAND ARGS`, split as a shell splits plain and quoted words (required)")
	servers := fs.String("exec-servers", cluster.DefaultKind, "the servers to start for it, as run and compare's --exec-servers: `KINDS` such as postgres, redis*5 or redis,etcd (kinds: "+strings.Join(cluster.KindNames(), ", ")+")")
	// --servers is its older name (where servers run, for run and compare).
	fs.Var(stringAlias{servers}, "servers", "the older name of --exec-servers")
	ttl := fs.Duration("ttl", 10*time.Second, "the open request's ttl_ms: long, so that a lock the adapter keeps is still there when the check looks")
	timeout := fs.Duration("timeout", 300*time.Millisecond, "the open request's timeout_ms")
	dir := fs.String("dir", "", "keep the adapter copies' and servers' logs in `DIR` (default: a temporary directory, removed)")
	quiet := fs.Bool("quiet", false, "print only the findings")
	tlsOn := fs.Bool("tls", false, "start the servers with TLS, from a certificate authority made for the check, as run --tls does (auth.KIND.tls in the open request): python-etcd3 sends its password only over TLS")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: locktorture client-check --exec 'COMMAND ARGS' [flags]\n\nDrives an adapter (a program speaking the client protocol, docs/client-protocol.md)\nthrough the protocol's corners against real servers it starts, and says in plain\nwords each rule the adapter breaks. Exit 0: every rule kept; 1: a rule broken.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, stderr); !ok {
		return code
	}
	if *execCmd == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "locktorture client-check: --exec 'COMMAND ARGS' is required, and nothing else (see: locktorture client-check --help)")
		return exitBadArgs
	}
	argv, err := scenarios.SplitCommand(*execCmd)
	if err != nil || len(argv) == 0 {
		fmt.Fprintf(stderr, "locktorture client-check: --exec: %v\n", err)
		return exitBadArgs
	}
	kinds, err := backends.ParseServers(programServers(*servers), cluster.KindNames())
	if err != nil {
		fmt.Fprintf(stderr, "locktorture client-check: --exec-servers: %v\n", err)
		return exitBadArgs
	}
	if *timeout <= 0 || *ttl <= 0 {
		fmt.Fprintln(stderr, "locktorture client-check: --ttl and --timeout must be positive")
		return exitBadArgs
	}
	work := *dir
	if work != "" {
		if err := os.MkdirAll(work, 0o755); err != nil {
			fmt.Fprintf(stderr, "locktorture client-check: --dir: %v\n", err)
			return exitBadArgs
		}
	}
	// Owned (owner.Mark), so that should this process be killed with
	// SIGKILL, the next run, check or compare removes it.
	tmp, err := clientprotocol.MkdirOwned("locktorture-client-check-cmd-")
	if err != nil {
		return fail(stderr, "client-check", err)
	}
	defer os.RemoveAll(tmp)
	if argv, err = clients.Resolve(argv, tmp); err != nil {
		return fail(stderr, "client-check", err)
	}
	opt := clientprotocol.CheckOptions{Command: argv, Servers: kinds, TTL: *ttl, Timeout: *timeout, Dir: work, TLS: *tlsOn}
	if !*quiet {
		opt.Progress = func(s string) { fmt.Fprintf(stderr, "client-check: %s\n", s) }
	}
	rep, err := clientprotocol.Check(ctx, opt)
	if err != nil && ctx.Err() != nil {
		// No verdict on a check it never finished.
		where := ""
		if work != "" {
			where = " (the logs so far are in " + work + ")"
		}
		fmt.Fprintf(stderr, "locktorture client-check: interrupted: the check did not finish, so it says nothing of the adapter%s\n", where)
		return exitHarness
	}
	if rep != nil {
		fmt.Fprint(stdout, rep.Text())
		for _, l := range rep.Logs {
			fmt.Fprintf(stdout, "log:     %s\n", l)
		}
	}
	switch {
	case err != nil && errors.Is(err, clientprotocol.ErrCheck):
		return fail(stderr, "client-check", err)
	case err != nil:
		return fail(stderr, "client-check", err)
	case len(rep.Broken()) > 0:
		return exitInvalid
	}
	return exitValid
}
