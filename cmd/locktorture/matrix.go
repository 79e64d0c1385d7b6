package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/shell"
	"github.com/locktorture/locktorture/internal/words"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/runner"
	"github.com/locktorture/locktorture/scenarios"
	"github.com/locktorture/locktorture/shrink"
)

// startRunProgress shows a run's progress on stderr (a bar on a terminal,
// a line every few seconds otherwise) unless quiet; the returned function
// stops it.
func startRunProgress(opt *runner.Options, sc *scenarios.Scenario, stderr io.Writer, quiet bool) func() {
	if quiet {
		return func() {}
	}
	p := reports.NewProgress(stderr, 5*time.Second)
	info, _, _ := backends.Lookup(sc.Backend)
	p.StartRun(sc.Name+" / "+sc.Backend, sc.Duration.D(), !info.LockFree)
	opt.Observe = p.Observe
	if opt.Log != nil {
		opt.Log = p.Writer()
	}
	return p.Close
}

// splitList splits "a,b, c" into its non-empty words.
func splitList(s string) []string {
	var out []string
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// matrixExit is the exit code of a finished matrix: 255 when a run failed
// with a harness error, 1 when a cell differs from its expectation (or is
// missing), 0 when every cell is as expected.
func matrixExit(m *matrix.Matrix) int {
	switch {
	case m.HasErrors():
		return exitHarness
	case !m.Valid:
		return exitInvalid
	}
	return exitValid
}

// defaultParallel is how many cells a matrix runs at once unless told.
const defaultParallel = 2

// maxParallel is the most cells a matrix runs at once.
const maxParallel = 64

// cellsPerCore is how many cells --parallel auto runs on each core found: a
// cell mostly waits — on its faults, its lease and its clients' timers —
// and the cores stay far from busy with two each (the 403-run comparison
// at 4 on 2 cores: load below 1.5, every cell as expected).
const cellsPerCore = 2

// maxCellsPerCore is the most cells a core --parallel auto runs: light
// cells (in-process clients over Redis: 0.3 CPU-s a cell) leave the cores
// idle at two a core, and get up to four (matrix.AutoLanes).
const maxCellsPerCore = 4

// matrixFlags are the flags matrix and compare share.
type matrixFlags struct {
	scs, bks, store, shard, servers, serversFile, clientMode *string
	seeds, parallel                                          *int
	quiet, plan, doShrink, prestart                          *bool
	parallelAuto                                             bool
	duration, linTimeout                                     *time.Duration
	images                                                   map[string]string
	redisProgram, versionsFile                               *string
	imageSets                                                map[string][]string
	// execs are compare's --exec values, as given (NAME='COMMAND ARGS');
	// execServers and execClaims its --exec-servers and --exec-claim
	// values (NAME=KINDS, NAME=CLAIM).
	execs, execServers, execClaims []string
}

// defineMatrixFlags declares the flags of matrix (or, with compare, of
// compare: --families instead of --scenarios, 3 seeds, no shards or
// shrinking).
func defineMatrixFlags(fs *flag.FlagSet, compare bool) *matrixFlags {
	f := &matrixFlags{}
	if compare {
		f.scs = fs.String("families", "", "comma-separated fault `FAMILIES` (default: all: "+strings.Join(scenarios.Families, ", ")+")")
		f.bks = fs.String("backends", "", "comma-separated backend `NAMES` (default: every built-in backend)")
		f.seeds = fs.Int("seeds", 3, "seeds per family and backend: the scenario's seed, seed+1, ...")
		f.doShrink = new(bool)
		fs.Func("exec", "a program of yours as a row: `NAME='COMMAND ARGS'` (repeatable), speaking the client protocol (docs/client-protocol.md), split as a shell splits plain and quoted words; it runs every family that applies to its servers beside the built-in rows (one redis-server unless --exec-servers says otherwise), its cells judged against its --exec-claim, or against none (docs/compare.md)", func(v string) error {
			f.execs = append(f.execs, v)
			return nil
		})
		fs.Func("exec-servers", "the servers of an --exec row: `NAME=KINDS`, one entry per server, such as mylock=postgres or myredlock=redis*5 (kinds: "+strings.Join(cluster.KindNames(), ", ")+")", func(v string) error {
			f.execServers = append(f.execServers, v)
			return nil
		})
		fs.Func("exec-claim", "what an --exec row claims of its lock: `NAME=CLAIM`, CLAIM one of safe, stale-holder-possible or like:BACKEND (whatever each family expects of that built-in); its cells are judged against it, the exit code and junit.xml count them", func(v string) error {
			f.execClaims = append(f.execClaims, v)
			return nil
		})
	} else {
		f.scs = fs.String("scenarios", "", "comma-separated scenario `NAMES` or .yaml files (default: every built-in scenario)")
		f.bks = fs.String("backends", "", "comma-separated backend `NAMES` (default: every backend each scenario applies to)")
		f.seeds = fs.Int("seeds", 1, "seeds per scenario and backend: the scenario's seed, seed+1, ...")
		f.doShrink = fs.Bool("shrink", false, "shrink every invalid cell whose faults were random (see locktorture shrink): shrunk.yaml and shrink.html land in its run")
	}
	f.shard = fs.String("shard", "", "run only share `i/n` of the cells (e.g. 1/2; shares of about equal estimated time), for splitting across CI machines; join with: locktorture merge")
	f.store = fs.String("store", "store", "store `DIR` for the runs and store/matrix/<timestamp>/")
	f.quiet = fs.Bool("quiet", false, "no progress; print only the table")
	f.duration = fs.Duration("duration", 0, "override every scenario's client run time (quick checks; expectations may then not hold)")
	f.linTimeout = fs.Duration("linearizable-timeout", 0, "time limit (above 0) for the linearizability checker in each run (default 30s)")
	f.plan = fs.Bool("plan", false, "print the cells this matrix (or shard) would run, and exit")
	f.parallel = new(int)
	*f.parallel = defaultParallel
	fs.Func("parallel", fmt.Sprintf("`N` cells to run at once (each starts its own servers on free ports), or auto: %d to %d per core found, as many as the planned cells' CPU leaves room for (a cell mostly waits on its faults and timers) (default %d)", cellsPerCore, maxCellsPerCore, defaultParallel), func(v string) error {
		if v == "auto" {
			*f.parallel, f.parallelAuto = min(cellsPerCore*runtime.NumCPU(), maxParallel), true
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("want a number of cells or auto, not %q", v)
		}
		*f.parallel, f.parallelAuto = n, false
		return nil
	})
	f.prestart = fs.Bool("prestart", true, "start a cell's servers while the cell before it in its lane winds down (once its clients are done), for the kinds slow to start (PostgreSQL, ZooKeeper, MariaDB); each run's time and faults are as without (--prestart=false: each cell starts its own when its turn comes)")
	f.servers = fs.String("servers", "", "where every cell's servers run: local (the default), docker or external (servers someone else runs: --servers-file)")
	f.serversFile = fs.String("servers-file", "", "with --servers external: a YAML file naming the servers")
	f.clientMode = fs.String("client-mode", "", "how every cell's clients run: inproc (the default) or process (one process each)")
	f.images = imageFlag(fs)
	f.redisProgram = fs.String("redis-program", "", "the server every cell's Redis backends run: redis (the default) or valkey")
	if !compare {
		f.imageSets = map[string][]string{}
		fs.Func("images", "the version axis: `KIND=REF,REF,...` (repeatable; with --servers docker) runs every cell once per image, side by side in the report (e.g. all=locktorture-servers:bullseye,locktorture-servers:trixie); a kind with one REF gives it to every set", func(v string) error {
			kind, refs, ok := strings.Cut(v, "=")
			if !ok || strings.TrimSpace(kind) == "" || len(splitList(refs)) == 0 {
				return fmt.Errorf("want KIND=REF,REF,... (all=locktorture-servers:bullseye,locktorture-servers:trixie), not %q", v)
			}
			f.imageSets[strings.TrimSpace(kind)] = splitList(refs)
			return nil
		})
		f.versionsFile = fs.String("versions", "", "the version axis from a YAML `FILE`: a list of {name, images: {KIND: REF}, redis_program} sets, every cell run once per set (see docs/versions.md)")
	} else {
		f.versionsFile = new(string)
	}
	return f
}

// options checks the parsed flags and turns them into the matrix's
// options; false with the exit code when they are bad.
func (f *matrixFlags) options(fs *flag.FlagSet, name string, args []string, stderr io.Writer) (runner.MatrixOptions, int, bool) {
	bad := func(format string, a ...any) (runner.MatrixOptions, int, bool) {
		fmt.Fprintf(stderr, "locktorture %s: "+format+"\n", append([]any{name}, a...)...)
		return runner.MatrixOptions{}, exitBadArgs, false
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	parallelSet := false
	fs.Visit(func(fl *flag.Flag) { parallelSet = parallelSet || fl.Name == "parallel" })
	if *f.servers == "external" && !parallelSet {
		// Cells share someone else's servers: a server fault of one cell
		// would hit the other's run. One at a time unless asked.
		*f.parallel = 1
	}
	if *f.parallel < 1 || *f.parallel > maxParallel {
		return bad("--parallel must be from 1 to %d, not %d (or auto: %d per core)", maxParallel, *f.parallel, cellsPerCore)
	}
	if *f.seeds < 1 || *f.seeds > 1000 {
		return bad("--seeds must be from 1 to 1000, not %d", *f.seeds)
	}
	opt := runner.MatrixOptions{
		Scenarios: splitList(*f.scs), Backends: splitList(*f.bks), Seeds: *f.seeds, Store: *f.store,
		LinearizableTimeout: *f.linTimeout, Command: shell.Join(append([]string{"locktorture", name}, args...)),
		Parallel: *f.parallel, Prestart: *f.prestart,
	}
	if *f.shard != "" {
		i, n, err := runner.ParseShard(*f.shard)
		if err != nil {
			return bad("%v", err)
		}
		opt.Shard, opt.Shards = i, n
	}
	if *f.duration != 0 {
		if *f.duration < 0 {
			return bad("--duration must be positive")
		}
		opt.Overrides.Duration = f.duration
		opt.RunArgs = append(opt.RunArgs, "--duration", f.duration.String())
	}
	if *f.servers != "" {
		opt.Overrides.Servers = f.servers
		opt.RunArgs = append(opt.RunArgs, "--servers", *f.servers)
	}
	if *f.clientMode != "" {
		opt.Overrides.ClientMode = f.clientMode
		opt.RunArgs = append(opt.RunArgs, "--client-mode", *f.clientMode)
	}
	if *f.serversFile != "" {
		opt.Overrides.ServersFile = f.serversFile
		opt.RunArgs = append(opt.RunArgs, "--servers-file", *f.serversFile)
	}
	if len(f.images) > 0 {
		opt.Overrides.Images = f.images
		opt.RunArgs = append(opt.RunArgs, imageArgs(f.images)...)
	}
	if *f.redisProgram != "" {
		opt.Overrides.RedisProgram = f.redisProgram
		opt.RunArgs = append(opt.RunArgs, "--redis-program", *f.redisProgram)
	}
	versions, err := f.versions()
	if err != nil {
		return bad("%v", err)
	}
	opt.Versions = versions
	return opt, 0, true
}

// autoBounds are the fewest and most cells --parallel auto runs at once
// on cores: two to four a core (maxParallel at most); two a core for
// servers other than local ones (servers: --servers), as the cells' CPU
// was measured with local servers — in containers each start is also the
// engine's work, on someone else's servers theirs.
func autoBounds(cores int, servers string) (lo, hi int) {
	lo, hi = min(cellsPerCore*cores, maxParallel), min(maxCellsPerCore*cores, maxParallel)
	if servers != "" && servers != cluster.ServersLocal {
		hi = lo
	}
	return lo, hi
}

// autoLanes sets opt.Parallel for --parallel auto from the planned cells
// (matrix.AutoLanes: two a core, more while the cells' CPU leaves the
// cores room) and says so on stderr; nothing without auto. A plan that
// fails keeps two a core: the run then says what is wrong.
func (f *matrixFlags) autoLanes(opt *runner.MatrixOptions, name string, stderr io.Writer) {
	if !f.parallelAuto {
		return
	}
	servers := ""
	if opt.Overrides.Servers != nil {
		servers = *opt.Overrides.Servers
	}
	cores := runtime.NumCPU()
	lo, hi := autoBounds(cores, servers)
	opt.Parallel = lo
	shares, _, err := runner.PlanShards(*opt)
	if err == nil {
		mine := shares[0]
		if opt.Shards > 1 {
			mine = shares[opt.Shard-1]
		}
		opt.Parallel = matrix.AutoLanes(mine, cores, lo, hi, opt.Prestart)
	}
	if hi == lo {
		fmt.Fprintf(stderr, "locktorture %s: --parallel auto: %s found, %d at once (%d a core: the cells' CPU was measured with local servers, not these; a cell mostly waits)\n",
			name, words.Count(cores, "core", "cores"), opt.Parallel, cellsPerCore)
		return
	}
	fmt.Fprintf(stderr, "locktorture %s: --parallel auto: %s found, %d at once (%d to %d: as many as keep the cells' processes within %.0f%% of the cores; a cell mostly waits)\n",
		name, words.Count(cores, "core", "cores"), opt.Parallel, lo, hi, 100*matrix.CPUBudget)
}

// versions are the version sets --images or --versions name (not both).
func (f *matrixFlags) versions() ([]matrix.Version, error) {
	switch {
	case len(f.imageSets) > 0 && *f.versionsFile != "":
		return nil, fmt.Errorf("give --images or --versions, not both")
	case len(f.imageSets) > 0:
		return matrix.VersionsFromImages(f.imageSets)
	case *f.versionsFile != "":
		return matrix.ReadVersions(*f.versionsFile)
	}
	return nil, nil
}

// printPlan prints the cells a matrix (or its shard) would run, the pairs
// it skips, and the estimate of every shard: its cells' estimated time one
// at a time (and at --parallel), and how far apart the shards are.
func printPlan(opt runner.MatrixOptions, name string, stdout, stderr io.Writer) int {
	shares, skipped, err := runner.PlanShards(opt)
	if err != nil {
		fmt.Fprintf(stderr, "locktorture %s: %v\n", name, err)
		return exitBadArgs
	}
	mine := shares[0]
	if opt.Shards > 1 {
		mine = shares[opt.Shard-1]
	}
	for _, c := range mine {
		fmt.Fprintln(stdout, c.Key)
	}
	for _, s := range skipped {
		fmt.Fprintf(stdout, "not applicable: %s / %s: %s\n", s.Scenario, s.Backend, s.Why)
	}
	parallel := max(opt.Parallel, 1)
	estimate := func(cells []matrix.Planned) string {
		d := matrix.Total(cells)
		// Side by side: the cells dealt longest first to the lane free
		// first, as the matrix deals them (matrix.Wall).
		wall := matrix.WallOnCores(cells, parallel, runtime.NumCPU(), opt.Prestart)
		return fmt.Sprintf("%s, estimated %s one at a time (%s at --parallel %d)",
			words.Count(len(cells), "cell", "cells"), roundEstimate(d), roundEstimate(wall), parallel)
	}
	if opt.Shards <= 1 {
		fmt.Fprintln(stdout, estimate(mine))
		return exitValid
	}
	var ests []time.Duration
	for i, sh := range shares {
		this := ""
		if i == opt.Shard-1 {
			this = "  <- this shard"
		}
		fmt.Fprintf(stdout, "shard %d/%d: %s%s\n", i+1, opt.Shards, estimate(sh), this)
		ests = append(ests, matrix.Total(sh))
	}
	fmt.Fprintf(stdout, "shards differ by %.1f%% (the longest estimate less the shortest, of the longest)\n", 100*matrix.Spread(ests))
	return exitValid
}

// roundEstimate rounds an estimate to the second.
func roundEstimate(d time.Duration) time.Duration {
	return d.Round(time.Second)
}

// plural is "1 cell" or "N cells".

// followCells shows a matrix's progress on stderr: the live bar follows
// one run at a time (the cell the runner follows); every cell prints its
// line as it ends, and once no cell is left to start, the line says
// which are still running.
func followCells(opt *runner.MatrixOptions, stderr io.Writer) *reports.Progress {
	prog := reports.NewProgress(stderr, 30*time.Second)
	opt.Observe = prog.Observe
	started, finished := 0, 0
	running := map[int]string{}
	opt.OnCell = func(ev runner.CellEvent) {
		label := fmt.Sprintf("[%d/%d] %s", ev.Index+1, ev.Total, ev.Key)
		if !ev.Done {
			started++
			running[ev.Index] = label
			prog.SetCells(finished, ev.Total)
			if ev.Followed {
				prog.StartRun(label, ev.Duration, !ev.LockFree)
			}
			return
		}
		finished++
		delete(running, ev.Index)
		if ev.Followed {
			prog.EndRun()
		}
		prog.SetCells(finished, ev.Total)
		c := ev.Cell
		res := "as expected"
		switch {
		case c.Verdict == matrix.VerdictError:
			res = "HARNESS ERROR: " + c.Error
		case !c.AsExpected:
			res = "NOT as expected: " + c.Why
		}
		line := fmt.Sprintf("%s: %s, %s (%.1fs)", label, c.Verdict, res, c.Seconds)
		if ev.Dir != "" {
			line += "  " + ev.Dir
		}
		prog.Printf("%s", line)
		if ev.Followed && started == ev.Total && len(running) > 0 {
			var labels []string
			for _, i := range slices.Sorted(maps.Keys(running)) {
				labels = append(labels, running[i])
			}
			prog.Printf("still running: %s", strings.Join(labels, ", "))
		}
	}
	return prog
}

func cmdMatrix(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := defineMatrixFlags(fs, false)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: locktorture matrix [flags]

Runs scenarios x backends against real servers (--parallel at a time), judges each
cell against the scenario's expectation for that backend, prints a table and
writes STORE/matrix/<timestamp>/ (index.html, matrix.png, results.json,
junit.xml). Exit 0 when every cell is as expected, 1 when one is not, 255 when
a run failed with a harness error.

`)
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, stderr); !ok {
		return code
	}
	opt, code, ok := f.options(fs, "matrix", args, stderr)
	if !ok {
		return code
	}
	f.autoLanes(&opt, "matrix", stderr)
	if *f.plan {
		return printPlan(opt, "matrix", stdout, stderr)
	}
	return runMatrixCommand(opt, f, "matrix", stdout, stderr, printMatrix)
}

// runMatrixCommand runs a planned matrix with its progress, prints its
// table with print, shrinks when asked, and returns the exit code.
func runMatrixCommand(opt runner.MatrixOptions, f *matrixFlags, name string, stdout, stderr io.Writer, print func(io.Writer, *runner.MatrixOutcome)) int {
	var prog *reports.Progress
	if !*f.quiet {
		prog = followCells(&opt, stderr)
		defer prog.Close()
	}
	ctx, cancel := signalContext()
	defer cancel()
	out, err := runner.RunMatrix(ctx, opt)
	prog.Close()
	if out == nil {
		return fail(stderr, name, err)
	}
	print(stdout, out)
	if err != nil {
		fmt.Fprintf(stderr, "locktorture %s: %s\n", name, errLine(err))
		return exitHarness
	}
	if *f.doShrink {
		shrinkCells(ctx, stdout, stderr, out)
	}
	return matrixExit(out.Matrix)
}

// printWritten prints the path of each labelled file of a matrix's
// directory that is there, and of none that is not: the directory is new
// to the matrix or merge, so a file there is one it wrote, and a report
// it could not write (a full disk) is never pointed at. The error says
// which failed.
func printWritten(w io.Writer, dir string, files [][2]string) {
	for _, f := range files {
		p := filepath.Join(dir, f[1])
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			fmt.Fprintf(w, "%-10s%s\n", f[0]+":", p)
		}
	}
}

// errLine is err on one line: the report's files fail each on a line of
// their own, joined.
func errLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}

// shrinkCells shrinks each cell that carries a shrink command (invalid,
// from random faults), one after another, saying what each came to. The
// matrix's exit code stays the verdicts'.
func shrinkCells(ctx context.Context, stdout, stderr io.Writer, out *runner.MatrixOutcome) {
	for _, c := range out.Matrix.Cells {
		if c.Shrink == "" || c.Dir == "" || ctx.Err() != nil {
			continue
		}
		dir := filepath.Join(out.Dir, filepath.FromSlash(c.Dir))
		fmt.Fprintf(stdout, "shrinking %s ...\n", c.CellKey)
		res, err := shrinkDir(ctx, dir, shrink.Options{Reruns: shrink.DefaultReruns})
		if res != nil && res.Shrunk != nil {
			fmt.Fprintf(stdout, "  %s -> %s: %s\n", res.OriginalShape(), res.ShrunkShape(), filepath.Join(dir, shrink.FileShrunk))
		}
		if err != nil {
			fmt.Fprintf(stderr, "locktorture matrix: shrink %s: %v\n", c.CellKey, err)
		}
	}
}

// printMatrix prints the table and where the report is.
func printMatrix(w io.Writer, out *runner.MatrixOutcome) {
	fmt.Fprintln(w)
	fmt.Fprint(w, reports.MatrixTable(out.Matrix))
	fmt.Fprintf(w, "matrix:   %s\n", out.Dir)
	printWritten(w, out.Dir, [][2]string{{"report", reports.FileIndex}, {"junit", reports.FileJUnit}})
}
