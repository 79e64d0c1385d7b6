// Command locktorture tortures distributed locks: it starts real lock
// servers on loopback, drives concurrent clients through a lock while
// nemeses inject faults, records the history, checks it, and stores a report.
//
// Exit codes (as Jepsen's): 0 valid, 1 invalid, 2 unknown, 254 bad arguments
// or scenario file, 255 the harness itself failed.
package main

import (
	"github.com/locktorture/locktorture/internal/secret"

	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster"

	// Every kind of server, registered with cluster's registry.
	_ "github.com/locktorture/locktorture/cluster/kinds/all"
	"github.com/locktorture/locktorture/internal/shell"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/runner"
	"github.com/locktorture/locktorture/scenarios"
)

// Exit codes.
const (
	exitValid   = 0
	exitInvalid = 1
	exitUnknown = 2
	exitBadArgs = 254
	exitHarness = 255
)

const usage = `locktorture — a torture harness for distributed locks

Usage:
  locktorture run      --scenario NAME | --scenario-file PATH  [overrides]
  locktorture analyze  PATH        re-check a stored run (no servers needed)
  locktorture matrix   [--scenarios a,b] [--backends x,y] [--seeds N] [--shard i/n]
                                   run scenarios x backends, judge each against its expectation
  locktorture compare  [--families a,b] [--backends x,y] [--seeds N]
                                   compare locks: every fault family on every backend, side by side
  locktorture merge    MATRIX...   join a matrix's shards into one report
  locktorture report   PATH        redraw a stored run's or matrix's report (no servers needed)
  locktorture shrink   RUN         shrink a failing run to the smallest scenario that still fails
  locktorture client-check --exec 'COMMAND ARGS'
                                   drive your adapter through the client protocol's corners; say each rule it breaks
  locktorture list     backends|scenarios|nemeses|packages|findings
  locktorture repro    ID [--store DIR] [--seed N]
                                   run a finding (docs/findings.md): exit 1 when it reproduces, 0 when it no longer does
  locktorture bisect   ID [--versions FROM..TO] [--seeds N] [--store DIR]
                                   the first version of a finding's Go library at which it reproduces (docs/bisect.md)
  locktorture compose  [--dir DIR] [--image KIND=REF]
                                   write docker-compose.yml and compose.servers.yaml: a standing cluster of every kind
  locktorture COMMAND --help

Exit codes: 0 valid, 1 invalid, 2 unknown, 254 bad arguments or scenario, 255 harness failure.
`

func main() {
	// Nothing printed holds a secret (a password the servers file names
	// by reference): every line is masked on its way out.
	os.Exit(run(os.Args[1:], secret.Writer(os.Stdout), secret.Writer(os.Stderr)))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBadArgs
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "analyze":
		return cmdAnalyze(args[1:], stdout, stderr)
	case "list":
		return cmdList(args[1:], stdout, stderr)
	case "matrix":
		return cmdMatrix(args[1:], stdout, stderr)
	case "compare":
		return cmdCompare(args[1:], stdout, stderr)
	case "merge":
		return cmdMerge(args[1:], stdout, stderr)
	case "report":
		return cmdReport(args[1:], stdout, stderr)
	case "client":
		return cmdClient(args[1:], stdout, stderr)
	case "client-check":
		return cmdClientCheck(args[1:], stdout, stderr)
	case "shrink":
		return cmdShrink(args[1:], stdout, stderr)
	case "repro":
		return cmdRepro(args[1:], stdout, stderr)
	case "bisect":
		return cmdBisect(args[1:], stdout, stderr)
	case "compose":
		return cmdCompose(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitValid
	}
	fmt.Fprintf(stderr, "locktorture: unknown command %q (run, analyze, list, matrix, compare, merge, report, shrink, repro, bisect, client-check, compose)\n", args[0])
	return exitBadArgs
}

// stopWithin is how long a command may take to stop after SIGINT or
// SIGTERM: past it, or at a second signal, it exits 255 at once (what it
// leaves, a later run removes).
const stopWithin = 4500 * time.Millisecond

// signalContext is cancelled by SIGINT or SIGTERM; the command then has
// stopWithin to end, and a second signal ends it at once.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		cancel()
		t := time.NewTimer(stopWithin)
		why := fmt.Sprintf("still stopping %s after the interrupt", stopWithin)
		select {
		case <-done:
			return
		case <-t.C:
		case <-sigs:
			why = "interrupted again"
		}
		fmt.Fprintf(os.Stderr, "locktorture: %s: exiting now (a later run removes what this one left)\n", why)
		os.Exit(exitHarness)
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
		})
		cancel()
	}
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("scenario", "", "built-in scenario `NAME` (see: locktorture list scenarios)")
	file := fs.String("scenario-file", "", "scenario file `PATH` (YAML)")
	backend := fs.String("backend", "", "lock backend `NAME` (see: locktorture list backends)")
	resource := fs.String("resource", "", "protected resource: memory, postgres, mysql or etcd")
	fencing := fs.String("fencing", "", "resource fencing: none, writes or all")
	clients := fs.Int("clients", 0, "number of client processes")
	keys := fs.Int("keys", 0, "number of lock keys")
	ttl := fs.Duration("ttl", 0, "lock lease (e.g. 1s)")
	hold := fs.Duration("hold", 0, "work time inside the critical section")
	duration := fs.Duration("duration", 0, "how long clients run")
	timeout := fs.Duration("timeout", 0, "timeout of each lock request")
	seed := fs.Int64("seed", 0, "random seed of clients and faults (repeat a run with the seed it printed)")
	nem := fs.String("nemesis", "", "replace the scenario's faults: none, or a seeded random mix such as pause,partition,clock (all: every fault that applies; see: locktorture list nemeses)")
	nemInterval := fs.Duration("nemesis-interval", 0, "mean time between random faults (with --nemesis)")
	store := fs.String("store", "store", "store `DIR` for runs")
	quiet := fs.Bool("quiet", false, "print only the summary")
	clientMode := fs.String("client-mode", "", "how clients run: inproc (goroutines of the harness) or process (one process each; a pause freezes it whole)")
	execCmd := fs.String("exec", "", "run `COMMAND` (a program speaking the client protocol, docs/client-protocol.md) as backend exec, one copy per client")
	execServers := fs.String("exec-servers", "", "the servers your program gets (with --exec or backend exec), one entry per server: `KINDS` such as postgres, redis*5 or redis,etcd (kinds: "+strings.Join(cluster.KindNames(), ", ")+")")
	servers := fs.String("servers", "", "where servers run: local (processes of this machine, the default), docker (a container each) or external (servers someone else runs: --servers-file)")
	serversFile := fs.String("servers-file", "", "with --servers external: a YAML file naming the servers ("+strings.Join(cluster.ServersFileKeys(), ", ")+")")
	tlsOn := fs.Bool("tls", false, "start the run's own servers with TLS, from a certificate authority made for the run (security: tls)")
	images := imageFlag(fs)
	redisProgram := fs.String("redis-program", "", "the server Redis backends run: redis (redis-server, redis-sentinel; the default) or valkey (valkey-server, valkey-sentinel: Debian 13, or --image redis=locktorture-servers:trixie)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: locktorture run --scenario NAME | --scenario-file PATH [flags]\n\nRuns one scenario against real servers and checks the history.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "locktorture run: unexpected argument %q\n", fs.Arg(0))
		return exitBadArgs
	}
	var sc *scenarios.Scenario
	var err error
	switch {
	case *name != "" && *file != "":
		fmt.Fprintln(stderr, "locktorture run: give --scenario or --scenario-file, not both")
		return exitBadArgs
	case *name != "":
		sc, err = scenarios.Builtin(*name)
	case *file != "":
		sc, err = scenarios.LoadFile(*file)
	default:
		fmt.Fprintln(stderr, "locktorture run: --scenario NAME or --scenario-file PATH is required (see: locktorture list scenarios)")
		return exitBadArgs
	}
	if err != nil {
		fmt.Fprintf(stderr, "locktorture run: %v\n", err)
		return exitBadArgs
	}
	var o scenarios.Overrides
	// Each flag given overrides its setting; one not given leaves the
	// scenario's.
	given := map[string]func(){
		"backend": func() { o.Backend = backend }, "resource": func() { o.Resource = resource },
		"fencing": func() { o.Fencing = fencing }, "clients": func() { o.Clients = clients },
		"keys": func() { o.Keys = keys }, "ttl": func() { o.TTL = ttl }, "hold": func() { o.Hold = hold },
		"duration": func() { o.Duration = duration }, "timeout": func() { o.Timeout = timeout },
		"seed": func() { o.Seed = seed }, "nemesis": func() { o.Nemesis = nem },
		"nemesis-interval": func() { o.NemesisInterval = nemInterval }, "client-mode": func() { o.ClientMode = clientMode },
		"exec": func() { o.Exec = execCmd }, "servers": func() { o.Servers = servers },
		"servers-file": func() { o.ServersFile = serversFile }, "redis-program": func() { o.RedisProgram = redisProgram },
		"exec-servers": func() { o.ExecServers, err = backends.ParseServers(programServers(*execServers), cluster.KindNames()) },
	}
	fs.Visit(func(f *flag.Flag) {
		if set, ok := given[f.Name]; ok {
			set()
		}
	})
	if err != nil {
		fmt.Fprintf(stderr, "locktorture run: --exec-servers: %v\n", err)
		return exitBadArgs
	}
	o.Images = images
	o.TLS = *tlsOn
	before := *sc
	if err := sc.Apply(o); err != nil {
		fmt.Fprintf(stderr, "locktorture run: %v\n", err)
		return exitBadArgs
	}
	// An override that changes what the expectation is about leaves it
	// unjudged: the run, its report and a later analyze expect nothing.
	unjudged := o.Unjudged(&before, sc)
	if unjudged != "" {
		sc.Expect = scenarios.Expect{}
	}
	ctx, cancel := signalContext()
	defer cancel()
	opt := runner.Options{Store: *store, Command: repeatCommand(sc, *name, *file, args)}
	if !*quiet {
		opt.Log = stderr
	}
	stopProgress := startRunProgress(&opt, sc, stderr, *quiet)
	out, err := runner.Run(ctx, sc, opt)
	stopProgress()
	if out != nil {
		printOutcome(stdout, out)
		if unjudged != "" {
			fmt.Fprintf(stdout, "expected: not judged — the scenario's expectation (%s) is about another run: %s\n", expectationText(before.Expected(before.Backend)), unjudged)
		}
		fmt.Fprintf(stdout, "repeat:   %s\n", opt.Command)
	}
	if err != nil {
		return fail(stderr, "run", err)
	}
	return exitCode(out.Results.Valid)
}

// repeatCommand is the command line that repeats this run, seed included.
func repeatCommand(sc *scenarios.Scenario, name, file string, args []string) string {
	parts := []string{"locktorture", "run"}
	if name != "" {
		parts = append(parts, "--scenario", name)
	} else {
		parts = append(parts, "--scenario-file", file)
	}
	// Keep the user's overrides as given, then pin the seed.
	for i := 0; i < len(args); i++ {
		a := args[i]
		n := strings.TrimLeft(a, "-")
		if k, _, ok := strings.Cut(n, "="); ok {
			n = k
		}
		switch n {
		case "scenario", "scenario-file", "seed", "quiet":
			if !strings.Contains(a, "=") && n != "quiet" {
				i++
			}
			continue
		}
		parts = append(parts, a)
	}
	parts = append(parts, "--seed", fmt.Sprint(sc.Seed))
	return shell.Join(parts)
}

func printOutcome(w io.Writer, out *runner.Outcome) {
	fmt.Fprintln(w)
	fmt.Fprint(w, out.Summary)
	if !strings.HasSuffix(out.Summary, "\n") {
		fmt.Fprintln(w)
	}
	if e := out.Expected; e.Valid != "" {
		// The matrix's judgment: the overall verdict and each checker's.
		if ok, why := scenarios.Judge(out.Results, e.Valid, e.Checkers); ok {
			fmt.Fprintf(w, "expected: %s — as expected\n", expectationText(e))
		} else {
			fmt.Fprintf(w, "expected: %s — NOT as expected: %s\n", expectationText(e), why)
		}
	}
	fmt.Fprintf(w, "store:    %s\n", out.Dir)
	if _, err := os.Stat(filepath.Join(out.Dir, "index.html")); err == nil {
		fmt.Fprintf(w, "report:   %s\n", filepath.Join(out.Dir, "index.html"))
	}
}

// expectationText writes an expectation: its overall verdict, then each
// checker's, as "invalid (fencing valid, lost-update valid)".
func expectationText(e scenarios.Expectation) string {
	if e.Valid == scenarios.Either {
		// Either verdict: valid, or invalid with its checkers; and why.
		inv := expectationText(scenarios.Expectation{Valid: checker.Invalid.String(), Checkers: e.Checkers})
		return "either valid or " + inv + " — " + e.Why
	}
	if len(e.Checkers) == 0 {
		return e.Valid
	}
	names := make([]string, 0, len(e.Checkers))
	for n := range e.Checkers {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		names[i] = n + " " + e.Checkers[n]
	}
	return e.Valid + " (" + strings.Join(names, ", ") + ")"
}

func exitCode(v checker.Validity) int {
	switch v {
	case checker.Valid:
		return exitValid
	case checker.Invalid:
		return exitInvalid
	}
	return exitUnknown
}

func cmdAnalyze(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := signalContext()
	defer cancel()
	return analyze(ctx, args, stdout, stderr)
}

func cmdList(args []string, stdout, stderr io.Writer) int {
	const listUsage = "Usage: locktorture list backends|scenarios|nemeses|packages|findings"
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stdout, listUsage)
		return exitValid
	}
	if len(args) != 1 {
		fmt.Fprintln(stderr, listUsage)
		return exitBadArgs
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	defer tw.Flush()
	switch args[0] {
	case "backends":
		fmt.Fprintln(tw, "NAME\tFENCING\tSERVERS\tOPTIONS\tDESCRIPTION")
		for _, b := range backends.List() {
			fence := "no"
			if b.Fencing {
				fence = "yes"
			}
			opts := "-"
			if b.Options != nil {
				if keys := backends.OptionKeys(b.Options()); keys == nil {
					opts = "any"
				} else if len(keys) > 0 {
					opts = strings.Join(keys, ",")
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", b.Name, fence, b.Servers, opts, b.Description)
		}
	case "scenarios":
		fmt.Fprintln(tw, "NAME\tBACKEND\tEXPECTED\tDESCRIPTION")
		names := scenarios.BuiltinNames()
		sort.Strings(names)
		for _, n := range names {
			sc, err := scenarios.Builtin(n)
			if err != nil {
				fmt.Fprintf(stderr, "locktorture list: %v\n", err)
				return exitHarness
			}
			desc := strings.Join(strings.Fields(sc.Description), " ")
			if len(desc) > 90 {
				desc = desc[:87] + "..."
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n, sc.Backend, expectedText(sc), desc)
		}
	case "nemeses":
		fmt.Fprintln(tw, "NAME\tAPPLIES TO\tDESCRIPTION")
		for _, n := range nemesis.List() {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Name, n.AppliesTo, n.Description)
		}
	case "packages":
		listPackages(tw)
	case "findings":
		listFindings(tw)
	default:
		fmt.Fprintf(stderr, "locktorture list: unknown list %q (backends, scenarios, nemeses, packages, findings)\n", args[0])
		return exitBadArgs
	}
	return exitValid
}

// listPackages lists every server kind's Debian packages, one per line:
// "required" ones every suite must have, "optional" ones a suite may lack
// (scripts/images.sh and scripts/deps.sh read this list); then the
// packages the program rows' clients need (a Python library), "client"
// with the backend's name in the KIND column (make deps installs them;
// server images leave them out).
func listPackages(w io.Writer) {
	fmt.Fprintln(w, "PACKAGE\tKIND\tNEED")
	for _, k := range cluster.Kinds() {
		for _, p := range k.Packages {
			fmt.Fprintf(w, "%s\t%s\trequired\n", p, k.Name)
		}
		for _, p := range k.OptionalPackages {
			fmt.Fprintf(w, "%s\t%s\toptional\n", p, k.Name)
		}
	}
	for _, p := range backends.ClientPackages() {
		fmt.Fprintf(w, "%s\t%s\tclient\n", p.Name, p.Backend)
	}
}

// expectedText shows the default expectation and per-backend exceptions.
func expectedText(sc *scenarios.Scenario) string {
	s := sc.Expect.Valid
	if s == "" {
		s = "-"
	}
	var ex []string
	for b, e := range sc.Expect.Backends {
		if e.Valid != "" && e.Valid != sc.Expect.Valid {
			ex = append(ex, b+": "+e.Valid)
		}
	}
	sort.Strings(ex)
	if len(ex) > 0 {
		s += " (" + strings.Join(ex, ", ") + ")"
	}
	return s
}
