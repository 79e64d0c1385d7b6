package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
		code := cmdCompare(args, stdout, stderr)
		for _, ax := range axes {
			fmt.Fprintf(stdout, "--library %s: rows %s again at %s, each by this program rebuilt against it\n", ax.module, strings.Join(ax.rows, ", "), strings.Join(ax.versions, ", "))
		}
		return code
	}
	// Build every version first: one that does not build is said before
	// anything runs, and left out.
	type part struct {
		name, module, version string
		rows                  []string
		bin                   string
	}
	var parts []part
	for _, ax := range axes {
		for _, v := range ax.versions {
			bin, err := b.Build(ctx, ax.module, v)
			if errors.Is(err, libversion.ErrNoBuild) {
				fmt.Fprintf(stderr, "locktorture compare: --library: %s@%s: %v: its rows are left out\n", ax.module, v, err)
				continue
			}
			if err != nil {
				return fail(stderr, "compare", err)
			}
			parts = append(parts, part{name: strings.ReplaceAll(ax.module, "/", "!") + "@" + v, module: ax.module, version: v, rows: ax.rows, bin: bin})
		}
	}
	store := flagValue(fas, "store")
	if store == "" {
		store = "store"
	}
	final, err := newMatrixDir(store)
	if err != nil {
		return fail(stderr, "compare", err)
	}
	started := time.Now()
	// The comparison as asked, by this program.
	thisStore := filepath.Join(final, "parts", "this")
	code, err := runPart(final, "this", func(out io.Writer) int {
		return cmdCompare(withFlags(fas, []string{"store"}, "--store", thisStore), out, stderr)
	})
	if err != nil {
		return fail(stderr, "compare", err)
	}
	if code == exitBadArgs {
		_ = os.RemoveAll(final)
		return code
	}
	m, mdir, err := readPart(thisStore)
	if err != nil {
		return fail(stderr, "compare", fmt.Errorf("%w (the comparison's own output: %s)", err, filepath.Join(final, "parts", "this.txt")))
	}
	if err := relocate(m, mdir, final); err != nil {
		return fail(stderr, "compare", err)
	}
	var failed []string
	for _, p := range parts {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(stderr, "compare: %s at %s (rows %s)\n", p.module, p.version, strings.Join(p.rows, ", "))
		pstore := filepath.Join(final, "parts", p.name)
		pargs := withFlags(fas, []string{"store", "backends", "exec", "exec-servers", "exec-claim"}, "--store", pstore, "--backends", strings.Join(p.rows, ","))
		code, err := runPart(final, p.name, func(out io.Writer) int {
			cmd := exec.CommandContext(ctx, p.bin, append([]string{"compare"}, pargs...)...)
			cmd.Stdout, cmd.Stderr = out, stderr
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
		})
		if err != nil {
			return fail(stderr, "compare", err)
		}
		pm, pdir, err := readPart(pstore)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s@%s: exit %d, no comparison (%s)", p.module, p.version, code, filepath.Join(final, "parts", p.name+".txt")))
			continue
		}
		if err := relocate(pm, pdir, final); err != nil {
			return fail(stderr, "compare", err)
		}
		joinVersion(m, pm, p.version)
	}
	m.Started = filepath.Base(final)
	m.Command = shell.Join(append([]string{"locktorture", "compare"}, withFlags(fas, nil, libraryFlags(libs)...)...))
	m.Seconds = roundTo(time.Since(started).Seconds())
	m.Interrupted = m.Interrupted || ctx.Err() != nil
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

// readPart reads the comparison a part left in its store.
func readPart(store string) (*matrix.Matrix, string, error) {
	dir, err := filepath.EvalSymlinks(filepath.Join(store, "matrix", "latest"))
	if err != nil {
		return nil, "", fmt.Errorf("no comparison in %s: %w", store, err)
	}
	m, err := matrix.Read(dir)
	if err != nil {
		return nil, "", err
	}
	return m, dir, nil
}

// relocate makes m's cell directories (relative to from) relative to to.
func relocate(m *matrix.Matrix, from, to string) error {
	for i := range m.Cells {
		c := &m.Cells[i]
		if c.Dir == "" {
			continue
		}
		abs := filepath.Join(from, filepath.FromSlash(c.Dir))
		absTo, err := filepath.Abs(to)
		if err != nil {
			return err
		}
		absFrom, err := filepath.Abs(abs)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(absTo, absFrom)
		if err != nil {
			return err
		}
		c.Dir = filepath.ToSlash(rel)
	}
	return nil
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
