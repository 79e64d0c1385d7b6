package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/internal/libversion"
	"github.com/locktorture/locktorture/internal/shell"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/runner"
)

// libraryFlagUsage is compare's --library in its --help.
const libraryFlagUsage = "a Go library's rows at other versions too: `MODULE@V1,V2` (or @FROM..TO), repeatable; each version a row ROW@V beside ROW, run by this program rebuilt against it (docs/bisect.md)"

// libraryAxis is one --library MODULE@V1,V2: the module, its versions,
// and the built-in rows that use it.
type libraryAxis struct {
	module   string
	versions []string
	rows     []string
}

// libraryArgs takes compare's --library flags out of args: their values
// and the rest. ok is false when there is none.
func libraryArgs(args []string) (libs, rest []string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "library" {
			rest = append(rest, a)
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				val = "" // said by parseLibrary
			} else {
				i++
				val = args[i]
			}
		}
		libs = append(libs, val)
	}
	return libs, rest, len(libs) > 0
}

// goLibraryRows lists the built-in rows whose library is Go module
// module, in backends' order.
func goLibraryRows(module string) []string {
	var out []string
	for _, b := range backends.List() {
		if b.Library != nil && b.Library.Language == "Go" && b.Library.Module == module {
			out = append(out, b.Name)
		}
	}
	return out
}

// goLibraryModules names every Go library row and its module, for an
// error.
func goLibraryModules() string {
	var out []string
	for _, b := range backends.List() {
		if b.Library != nil && b.Library.Language == "Go" {
			out = append(out, b.Name+": "+b.Library.Module)
		}
	}
	return strings.Join(out, ", ")
}

// parseLibrary reads one --library value, MODULE@V1,V2 (each element a
// version or a FROM..TO range, as bisect's --versions): the versions the
// proxy serves, in the order given, without repeats.
// Rows not among asked (--backends, when given) are left out.
func parseLibrary(ctx context.Context, b *libversion.Builder, val string, asked []string) (libraryAxis, error) {
	at := strings.LastIndexByte(val, '@')
	if at <= 0 || at == len(val)-1 {
		return libraryAxis{}, fmt.Errorf("%w: --library %q: want MODULE@V1,V2 (e.g. github.com/redis/rueidis@v1.0.50,v1.0.69)", runner.ErrBadInput, val)
	}
	ax := libraryAxis{module: val[:at], rows: goLibraryRows(val[:at])}
	if len(ax.rows) == 0 {
		return ax, fmt.Errorf("%w: --library %s: no row's library is that Go module (the Go library rows: %s)", runner.ErrBadInput, ax.module, goLibraryModules())
	}
	if len(asked) > 0 {
		ax.rows = slices.DeleteFunc(ax.rows, func(r string) bool { return !slices.Contains(asked, r) })
		if len(ax.rows) == 0 {
			return ax, fmt.Errorf("%w: --library %s: none of --backends uses it (its rows: %s)", runner.ErrBadInput, ax.module, strings.Join(goLibraryRows(ax.module), ", "))
		}
	}
	var ranges []libversion.Range
	for _, el := range strings.Split(val[at+1:], ",") {
		r, err := libversion.ParseRange(el)
		if err != nil || strings.TrimSpace(el) == "" {
			return ax, fmt.Errorf("%w: --library %s: %q is not a version or FROM..TO", runner.ErrBadInput, ax.module, el)
		}
		ranges = append(ranges, r)
	}
	ours, err := b.Ours(ctx, ax.module)
	if err != nil {
		return ax, err
	}
	all, err := libversion.List(ctx, ax.module)
	if err != nil {
		return ax, err
	}
	for _, r := range ranges {
		vs, err := libversion.Select(libversion.WithEnds(ctx, ax.module, all, r), r, ours)
		if err != nil {
			return ax, fmt.Errorf("%w: --library %s: %w", runner.ErrBadInput, ax.module, err)
		}
		for _, v := range vs {
			if !slices.Contains(ax.versions, v) {
				ax.versions = append(ax.versions, v)
			}
		}
	}
	return ax, nil
}

// compareFlagArgs walks compare's arguments as its flag set reads them:
// each flag with its value tokens, keyed by name ("" for a word that is no
// flag).
type flagArg struct {
	name   string
	tokens []string
}

func compareFlagArgs(args []string) []flagArg {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	defineMatrixFlags(fs, true)
	var out []flagArg
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			out = append(out, flagArg{"", args[i:]})
			break
		}
		name, _, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		fa := flagArg{name: name, tokens: []string{a}}
		f := fs.Lookup(name)
		isBool := false
		if f != nil {
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
				isBool = true
			}
		}
		if !hasVal && !isBool && i+1 < len(args) {
			i++
			fa.tokens = append(fa.tokens, args[i])
		}
		out = append(out, fa)
	}
	return out
}

// flagValue is the last value given to flag name ("" when none).
func flagValue(fas []flagArg, name string) string {
	v := ""
	for _, fa := range fas {
		if fa.name != name {
			continue
		}
		if _, val, ok := strings.Cut(fa.tokens[0], "="); ok {
			v = val
		} else if len(fa.tokens) > 1 {
			v = fa.tokens[1]
		}
	}
	return v
}

// withFlags is fas without the flags named in drop, then extra.
func withFlags(fas []flagArg, drop []string, extra ...string) []string {
	var out []string
	for _, fa := range fas {
		if fa.name != "" && slices.Contains(drop, fa.name) {
			continue
		}
		out = append(out, fa.tokens...)
	}
	return append(out, extra...)
}

// cmdCompareLibrary is compare with --library: the comparison as asked,
// and each named Go library's rows again at each version, by this program
// rebuilt against it (internal/libversion), joined into one comparison
// whose rows ROW@V sit beside ROW.
func cmdCompareLibrary(libs, args []string, stdout, stderr io.Writer) int {
	fas := compareFlagArgs(args)
	if slices.ContainsFunc(fas, func(fa flagArg) bool { return fa.name == "h" || fa.name == "help" }) {
		return cmdCompare(args, stdout, stderr)
	}
	if flagValue(fas, "shard") != "" {
		fmt.Fprintln(stderr, "locktorture compare: --library with --shard: not supported; run the versions' shards without --library, or the whole comparison on one machine")
		return exitBadArgs
	}
	wd, _ := os.Getwd()
	src, err := libversion.FindSource(os.Getenv("LOCKTORTURE_SOURCE"), wd)
	if err != nil {
		fmt.Fprintf(stderr, "locktorture compare: --library: %v\n", err)
		return exitBadArgs
	}
	cache, err := libversion.CacheDir()
	if err != nil {
		return fail(stderr, "compare", err)
	}
	ctx, cancel := signalContext()
	defer cancel()
	// Builds and shares say what they do from goroutines of their own.
	stderr = &lockedWriter{w: stderr}
	b := &libversion.Builder{Source: src, Cache: cache, Log: stderr}
	asked := libSplitList(flagValue(fas, "backends"))
	var axes []libraryAxis
	for _, l := range libs {
		ax, err := parseLibrary(ctx, b, l, asked)
		if err != nil {
			return fail(stderr, "compare", err)
		}
		axes = append(axes, ax)
	}
	if *boolFlag(fas, "plan") {
		return libraryPlan(args, fas, axes, stdout, stderr)
	}
	parts, prestart, code := libraryParts(fas, axes, stderr)
	if parts == nil {
		return code
	}
	self, err := selfProgram()
	if err != nil {
		return fail(stderr, "compare", err)
	}
	parts[0].bin = self
	lanes := libraryLanes(fas, parts, prestart)
	shardParts(parts, lanes)
	store := flagValue(fas, "store")
	if store == "" {
		store = "store"
	}
	final, err := newMatrixDir(store)
	if err != nil {
		return fail(stderr, "compare", err)
	}
	quiet := *boolFlag(fas, "quiet")
	say := func(format string, a ...any) {
		if !quiet {
			fmt.Fprintf(stderr, "compare: "+format+"\n", a...)
		}
	}
	cells, total, _ := libraryEstimate(parts, lanes, prestart)
	say("%d cells in %d comparisons (%s), estimated %s one at a time, %d at once; each version built while cells run", cells, len(parts), strings.Join(partLabels(parts), ", "), roundEstimate(total), lanes)
	started := time.Now()
	var failed []string
	// Every part's shares in one pool of lanes: the comparison as asked's
	// at once, each version's as soon as it is built (one build at a
	// time, beside the cells).
	build := func(ctx context.Context, p *libPart) error {
		bin, err := buildVersion(ctx, b, p.module, p.version)
		switch {
		case errors.Is(err, libversion.ErrNoBuild):
			fmt.Fprintf(stderr, "locktorture compare: --library: %s: %v: its rows are left out\n", p.label(), err)
		case err != nil && ctx.Err() == nil:
			fmt.Fprintf(stderr, "locktorture compare: --library: %s: %v: its rows are left out\n", p.label(), err)
			failed = append(failed, fmt.Sprintf("%s: not built: %v", p.label(), err))
		case err == nil:
			say("%s built", p.label())
		}
		p.bin = bin
		return err
	}
	run := func(ctx context.Context, p *libPart, shard int) int {
		rows := ""
		if len(p.rows) > 0 {
			rows = " (rows " + strings.Join(p.rows, ", ") + ")"
		}
		say("%s%s%s: started", p.label(), rows, shareLabel(p, shard))
		t0 := time.Now()
		code, err := runPart(final, partFile(p, shard), func(out io.Writer) int {
			return runShare(ctx, p, shard, fas, partStore(final, p, shard), out)
		})
		if err != nil {
			fmt.Fprintf(stderr, "locktorture compare: %s: %v\n", p.label(), err)
			return exitHarness
		}
		say("%s%s: done in %s (exit %d)", p.label(), shareLabel(p, shard), time.Since(t0).Round(time.Second), code)
		return code
	}
	scheduleParts(ctx, parts, lanes, build, run)
	// Join the parts: the comparison as asked, then each version's rows
	// beside their row.
	m, err := readShares(final, parts[0])
	if err != nil {
		return fail(stderr, "compare", fmt.Errorf("%w (the comparison's own output: %s)", err, filepath.Join(final, "parts", partFile(parts[0], 1)+".txt")))
	}
	if slices.Contains(parts[0].codes, exitBadArgs) && len(m.Cells) == 0 {
		_ = os.RemoveAll(final)
		return exitBadArgs
	}
	for _, p := range parts[1:] {
		if p.buildErr != nil {
			continue
		}
		pm, err := readShares(final, p)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: exit %v, no comparison (%v; %s)", p.label(), p.codes, err, filepath.Join(final, "parts", partFile(p, 1)+".txt")))
			continue
		}
		joinVersion(m, pm, p.version)
	}
	m.Started = filepath.Base(final)
	m.Command = shell.Join(append([]string{"locktorture", "compare"}, withFlags(fas, nil, libraryFlags(libs)...)...))
	m.Shard, m.Shards = "", nil
	m.Seconds = roundTo(time.Since(started).Seconds())
	m.Interrupted = m.Interrupted || ctx.Err() != nil
	m.Finish()
	out := &runner.MatrixOutcome{Matrix: m, Dir: final}
	if err := reports.WriteMatrix(context.WithoutCancel(ctx), final, m); err != nil {
		return fail(stderr, "compare", err)
	}
	_ = linkMatrixLatest(store, final)
	printCompare(stdout, out)
	for _, f := range failed {
		fmt.Fprintf(stderr, "locktorture compare: --library %s\n", f)
	}
	if len(failed) > 0 {
		return exitHarness
	}
	return matrixExit(m)
}

// libraryPlan is compare --plan with --library: the comparison as
// asked's plan, then each axis's rows and versions, and the cells and
// estimate with the versions (libraryEstimate: compare --plan's lanes
// model over every part's cells).
func libraryPlan(args []string, fas []flagArg, axes []libraryAxis, stdout, stderr io.Writer) int {
	code := cmdCompare(args, stdout, stderr)
	if code != exitValid {
		return code
	}
	for _, ax := range axes {
		fmt.Fprintf(stdout, "--library %s: rows %s again at %s, each by this program rebuilt against it\n", ax.module, strings.Join(ax.rows, ", "), strings.Join(ax.versions, ", "))
	}
	parts, prestart, code := libraryParts(fas, axes, stderr)
	if parts == nil {
		return code
	}
	lanes := libraryLanes(fas, parts, prestart)
	cells, total, wall := libraryEstimate(parts, lanes, prestart)
	fmt.Fprintf(stdout, "with the versions: %d cells, estimated %s one at a time (%s at --parallel %d), and the builds not yet cached beside them\n", cells, roundEstimate(total), roundEstimate(wall), lanes)
	return exitValid
}

// libraryEstimate is every part's cells: how many, their estimated time
// one at a time, and at lanes side by side, as compare --plan estimates
// them (matrix.Wall, the cells dealt longest first to the lane free
// first).
func libraryEstimate(parts []*libPart, lanes int, prestart bool) (cells int, total, wall time.Duration) {
	var all []matrix.Planned
	for _, p := range parts {
		all = append(all, p.planned...)
	}
	return len(all), matrix.Total(all), matrix.WallOnCores(all, lanes, runtime.NumCPU(), prestart)
}

// buildVersion builds this program against module at version (a
// variable: tests stand in for the go command).
var buildVersion = func(ctx context.Context, b *libversion.Builder, module, version string) (string, error) {
	return b.Build(ctx, module, version)
}

// selfProgram is this program, which runs the comparison as asked (a
// variable: tests run the built binary in place of the test binary).
var selfProgram = os.Executable

// libraryParts plans the parts of a library comparison: the comparison as
// asked first, then each axis's versions, each with its cells and their
// estimated time (compare's options, planned: a version's plan is this
// program's for its rows), and whether the cells' lanes start slow
// servers ahead (--prestart). nil with the exit code when a part cannot
// be planned (bad input, said on stderr).
func libraryParts(fas []flagArg, axes []libraryAxis, stderr io.Writer) ([]*libPart, bool, int) {
	prestart := true
	plan := func(args []string) ([]matrix.Planned, int) {
		opt, _, remove, code, ok := compareOptions(args, stderr)
		if !ok {
			return nil, cmp.Or(code, exitBadArgs)
		}
		defer remove()
		prestart = opt.Prestart
		shares, _, err := runner.PlanShards(opt)
		if err != nil {
			fmt.Fprintf(stderr, "locktorture compare: %v\n", err)
			return nil, exitBadArgs
		}
		return shares[0], exitValid
	}
	asked := withFlags(fas, []string{"plan", "shard", "store", "parallel"})
	cells, code := plan(asked)
	if code != exitValid {
		return nil, false, code
	}
	parts := []*libPart{newLibPart("this", "", "", nil, cells)}
	byRows := map[string][]matrix.Planned{}
	for _, ax := range axes {
		key := strings.Join(ax.rows, ",")
		if _, ok := byRows[key]; !ok {
			if byRows[key], code = plan(versionArgs(asked, ax.rows)); code != exitValid {
				return nil, false, code
			}
		}
		for _, v := range ax.versions {
			parts = append(parts, newLibPart(escapeModule(ax.module)+"@"+v, ax.module, v, ax.rows, byRows[key]))
		}
	}
	return parts, prestart, exitValid
}

// versionArgs are a version's compare arguments from the user's (as
// flagArgs tokens): its rows alone, no --exec rows.
func versionArgs(args []string, rows []string) []string {
	return withFlags(compareFlagArgs(args), []string{"backends", "exec", "exec-servers", "exec-claim"}, "--backends", strings.Join(rows, ","))
}

// lockedWriter is a writer several goroutines write to, a write at a
// time.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func escapeModule(module string) string { return strings.ReplaceAll(module, "/", "!") }

// libraryLanes is how many cells a library comparison runs at once: the
// user's --parallel (a number, or auto), as compare takes it: auto by
// every part's cells (matrix.AutoLanes).
func libraryLanes(fas []flagArg, parts []*libPart, prestart bool) int {
	v := flagValue(fas, "parallel")
	switch {
	case v == "auto":
		var all []matrix.Planned
		for _, p := range parts {
			all = append(all, p.planned...)
		}
		cores := runtime.NumCPU()
		lo, hi := autoBounds(cores, flagValue(fas, "servers"))
		return matrix.AutoLanes(all, cores, lo, hi, prestart)
	case v != "":
		if n, err := strconv.Atoi(v); err == nil && n >= 1 {
			return min(n, maxParallel)
		}
	case flagValue(fas, "servers") == "external":
		return 1 // someone else's servers: one cell at a time unless asked
	}
	return defaultParallel
}

func partLabels(parts []*libPart) []string {
	var out []string
	for _, p := range parts {
		if p.module == "" {
			out = append(out, "as asked")
		} else {
			out = append(out, "@"+p.version)
		}
	}
	return out
}

// shareLabel is " share i/n" of a part run in shares, "" otherwise.
func shareLabel(p *libPart, shard int) string {
	if p.shards <= 1 {
		return ""
	}
	return fmt.Sprintf(" share %d/%d", shard, p.shards)
}

// partFile names a share's output under parts/ (without .txt).
func partFile(p *libPart, shard int) string {
	if p.shards <= 1 {
		return p.name
	}
	return fmt.Sprintf("%s-%d", p.name, shard)
}

// partStore is a share's store.
func partStore(final string, p *libPart, shard int) string {
	return filepath.Join(final, "parts", partFile(p, shard))
}

// runShare runs one share of a part: compare with the user's flags, the
// part's rows, the share's store and --shard, one lane (the lanes are
// the pool's), quiet (the pool says what runs), its output to out.
func runShare(ctx context.Context, p *libPart, shard int, fas []flagArg, store string, out io.Writer) int {
	args := withFlags(fas, []string{"store", "parallel", "shard", "quiet"})
	if p.module != "" {
		args = versionArgs(args, p.rows)
	}
	args = append(args, "--store", store, "--parallel", "1", "--quiet")
	if p.shards > 1 {
		args = append(args, "--shard", fmt.Sprintf("%d/%d", shard, p.shards))
	}
	cmd := exec.CommandContext(ctx, p.bin, append([]string{"compare"}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 2 * stopWithin
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		fmt.Fprintf(out, "%v\n", err)
		return exitHarness
	}
	return exitValid
}

// readShares reads a part's comparison from its shares' stores, joined
// (matrix.Merge: a share that left none has its cells missing), its
// cells' directories relative to final. An error when no share left one.
func readShares(final string, p *libPart) (*matrix.Matrix, error) {
	var dirs []string
	var firstErr error
	for i := 1; i <= max(p.shards, 1); i++ {
		dir, err := filepath.EvalSymlinks(filepath.Join(partStore(final, p, i), "matrix", "latest"))
		if err != nil {
			// An interrupted share leaves no latest: its newest matrix.
			dir, err = newestMatrix(partStore(final, p, i))
		}
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		dirs = append(dirs, dir)
	}
	if len(dirs) == 0 {
		return nil, firstErr
	}
	m, err := matrix.Merge(dirs, final)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// newestMatrix is the newest matrix directory in a store.
func newestMatrix(store string) (string, error) {
	ents, err := os.ReadDir(filepath.Join(store, "matrix"))
	if err != nil {
		return "", fmt.Errorf("no comparison in %s: %w", store, err)
	}
	for i := len(ents) - 1; i >= 0; i-- {
		d := filepath.Join(store, "matrix", ents[i].Name())
		if ents[i].IsDir() && matrix.IsDir(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no comparison in %s", store)
}

func libraryFlags(libs []string) []string {
	var out []string
	for _, l := range libs {
		out = append(out, "--library", l)
	}
	return out
}

func libSplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func boolFlag(fas []flagArg, name string) *bool {
	v := false
	for _, fa := range fas {
		if fa.name != name {
			continue
		}
		_, val, ok := strings.Cut(fa.tokens[0], "=")
		v = !ok || val == "true" || val == "1"
	}
	return &v
}

func roundTo(s float64) float64 { return float64(int64(s*10+0.5)) / 10 }

// newMatrixDir makes store/matrix/<YYYYMMDDTHHMMSS>/ (with a suffix when
// the name is taken), as a comparison's own.
func newMatrixDir(store string) (string, error) {
	base := filepath.Join(store, "matrix", time.Now().Format("20060102T150405"))
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return "", err
	}
	dir := base
	for i := 1; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			return "", err
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

// linkMatrixLatest points store/matrix/latest at dir.
func linkMatrixLatest(store, dir string) error {
	link := filepath.Join(store, "matrix", "latest")
	tmp := fmt.Sprintf("%s.tmp-%d", link, os.Getpid())
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(dir), tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// runPart runs one part of the comparison, its printed table in
// final/parts/NAME.txt.
func runPart(final, name string, run func(io.Writer) int) (int, error) {
	path := filepath.Join(final, "parts", name+".txt")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	fh, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	return run(fh), nil
}

// joinVersion adds a version's comparison pm to m: each of its rows
// renamed ROW@V and put after ROW (or after the last of ROW's versions).
func joinVersion(m, pm *matrix.Matrix, version string) {
	rename := func(b string) string { return b + "@" + version }
	for _, b := range pm.Backends {
		at := len(m.Backends)
		for i, have := range m.Backends {
			if have == b || strings.HasPrefix(have, b+"@") {
				at = i + 1
			}
		}
		m.Backends = slices.Insert(m.Backends, at, rename(b))
	}
	for _, k := range pm.Planned {
		k.Backend = rename(k.Backend)
		m.Planned = append(m.Planned, k)
	}
	for _, s := range pm.Skipped {
		s.Backend = rename(s.Backend)
		m.Skipped = append(m.Skipped, s)
	}
	for _, c := range pm.Cells {
		c.Backend = rename(c.Backend)
		m.Cells = append(m.Cells, c)
	}
	for _, s := range pm.Scenarios {
		if !slices.Contains(m.Scenarios, s) {
			m.Scenarios = append(m.Scenarios, s)
		}
	}
	m.Interrupted = m.Interrupted || pm.Interrupted
}
