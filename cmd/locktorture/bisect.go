package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/locktorture/locktorture/findings"
	"github.com/locktorture/locktorture/internal/atomicfile"
	"github.com/locktorture/locktorture/internal/libversion"
	"github.com/locktorture/locktorture/internal/shell"
)

// bisectRecord is bisect.json: the finding, the range and seeds asked
// for, and what the search found.
type bisectRecord struct {
	Finding  string             `json:"finding"`
	Module   string             `json:"module"`
	Ours     string             `json:"ours"`
	Range    string             `json:"range"`
	Seeds    []int64            `json:"seeds"`
	Command  string             `json:"command"`
	Started  time.Time          `json:"started"`
	Seconds  float64            `json:"seconds"`
	Result   *libversion.Result `json:"result"`
	DocsLine string             `json:"docs_line"`
}

// cmdBisect finds the first version of a finding's Go library at which the
// finding reproduces: this program rebuilt against each version tried
// (internal/libversion), the finding's repro run with it on N seeds.
// Exit 0 when the search came to an answer, 2 when the newest version
// gave none, 254 for bad input (or a finding not on a Go library), 255
// when the harness failed.
func cmdBisect(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bisect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	versions := fs.String("versions", "", "versions to search, `FROM..TO` (either end may be left out; default: the last 12 stable releases up to the one this program is built with)")
	nseeds := fs.Int("seeds", 2, "runs per version (`N` seeds: the finding's own first)")
	store := fs.String("store", "store", "store `DIR`: the bisection goes in DIR/bisect/ID/<time>/")
	source := fs.String("source", os.Getenv("LOCKTORTURE_SOURCE"), "locktorture source tree `DIR` to rebuild (default: $LOCKTORTURE_SOURCE, or the checkout holding the working directory)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: locktorture bisect ID [--versions FROM..TO] [--seeds N] [--store DIR]\n\nFinds the first version of a finding's Go library at which the finding\nreproduces: this program is rebuilt against each version tried (a scratch module\nthat pins it, cached under $XDG_CACHE_HOME/locktorture/libversions), and the\nfinding's repro runs with it on N seeds; a binary search, both ends checked first.\nPrints the table version -> reproduced n/N and the first version, and writes\nbisect.json and bisect.txt. Exit 0 when the search came to an answer, 2 when the\nnewest version gave none, 254 for bad input, 255 when the harness failed.\n\n")
		fs.PrintDefaults()
	}
	f, code, ok := findingArg(fs, args, "bisect", stderr)
	if !ok {
		return code
	}
	if *nseeds < 1 {
		fmt.Fprintf(stderr, "locktorture bisect: --seeds %d: give at least 1\n", *nseeds)
		return exitBadArgs
	}
	if f.Module == "" {
		fmt.Fprintf(stderr, "locktorture bisect: finding %s's library is the Debian package %s, not a Go module: bisect covers Go modules; its versions are the Debian suites' (locktorture matrix --versions with the bullseye, bookworm and trixie images: docs/versions.md)\n", f.ID, f.Package)
		return exitBadArgs
	}
	rng, err := libversion.ParseRange(*versions)
	if err != nil {
		fmt.Fprintf(stderr, "locktorture bisect: %v\n", err)
		return exitBadArgs
	}
	wd, _ := os.Getwd()
	src, err := libversion.FindSource(*source, wd)
	if err != nil {
		fmt.Fprintf(stderr, "locktorture bisect: %v\n", err)
		return exitBadArgs
	}
	cache, err := libversion.CacheDir()
	if err != nil {
		return fail(stderr, "bisect", err)
	}
	ctx, cancel := signalContext()
	defer cancel()
	b := &libversion.Builder{Source: src, Cache: cache, Log: stderr}
	ours, err := b.Ours(ctx, f.Module)
	if err != nil {
		return fail(stderr, "bisect", err)
	}
	all, err := libversion.List(ctx, f.Module)
	if err != nil {
		return fail(stderr, "bisect", err)
	}
	all = libversion.WithEnds(ctx, f.Module, all, rng)
	list, err := libversion.Select(all, rng, ours)
	if err != nil {
		fmt.Fprintf(stderr, "locktorture bisect: %s: %v\n", f.Module, err)
		return exitBadArgs
	}
	seeds := bisectSeeds(f.Seeds, *nseeds)
	absStore, err := filepath.Abs(*store)
	if err != nil {
		return fail(stderr, "bisect", err)
	}
	started := time.Now()
	dir := filepath.Join(absStore, "bisect", f.ID, started.Format("20060102T150405"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(stderr, "bisect", err)
	}
	parts := []string{"locktorture", "bisect", f.ID, "--versions", list[0] + ".." + list[len(list)-1], "--seeds", fmt.Sprint(*nseeds)}
	if *store != "store" {
		parts = append(parts, "--store", *store)
	}
	command := shell.Join(parts)

	var txt strings.Builder
	out := io.MultiWriter(stdout, &txt)
	fmt.Fprintf(out, "bisect %s: %s, %d versions %s..%s (this program's: %s), seeds %s each\n", f.ID, f.Module, len(list), list[0], list[len(list)-1], ours, joinSeeds(seeds))
	fmt.Fprintf(out, "source:  %s\nstore:   %s\n", src, dir)
	probe := func(ctx context.Context, v string) (libversion.Row, error) {
		row := bisectVersion(ctx, b, f, v, seeds, filepath.Join(dir, v), stderr)
		if ctx.Err() != nil {
			return row, ctx.Err()
		}
		if row.Built || row.BuildError != "" {
			fmt.Fprintf(out, "  %-14s %s\n", v, row.Cell())
			if !row.Built {
				fmt.Fprintf(out, "  %-14s %s\n", "", row.BuildError)
			}
			return row, nil
		}
		return row, errors.New(strings.Join(row.Errors, "; "))
	}
	res, err := libversion.Bisect(ctx, list, probe)
	if err != nil {
		return fail(stderr, "bisect", err)
	}
	fmt.Fprintf(out, "\n%s\n%s: %s\n", res.Table(), f.ID, res.Summary)
	docs := bisectDocsLine(f, res, len(seeds))
	fmt.Fprintf(out, "\nfor docs/findings.md:\n%s\n", docs)
	if res.First != "" {
		fmt.Fprintf(out, "for findings/bisected.go:\n\t%q: {%q, %q},\n", f.ID, res.First, bisectHow(res, len(seeds)))
	}
	fmt.Fprintf(out, "repeat:  %s\n", command)
	rec := bisectRecord{Finding: f.ID, Module: f.Module, Ours: ours, Range: list[0] + ".." + list[len(list)-1], Seeds: seeds,
		Command: command, Started: started, Seconds: time.Since(started).Round(time.Second).Seconds(), Result: res, DocsLine: docs}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fail(stderr, "bisect", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, "bisect.json"), append(data, '\n')); err != nil {
		return fail(stderr, "bisect", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, "bisect.txt"), []byte(txt.String())); err != nil {
		return fail(stderr, "bisect", err)
	}
	fmt.Fprintf(stdout, "written: %s, %s\n", filepath.Join(dir, "bisect.json"), filepath.Join(dir, "bisect.txt"))
	if res.First == "" && !strings.HasPrefix(res.Summary, "does not reproduce") {
		return exitUnknown
	}
	return exitValid
}

// bisectSeeds is n seeds: the finding's own first, then the next ones up.
func bisectSeeds(own []int64, n int) []int64 {
	var out []int64
	next := int64(1)
	for _, s := range own {
		if len(out) == n {
			return out
		}
		out = append(out, s)
		next = max(next, s+1)
	}
	for len(out) < n {
		out = append(out, next)
		next++
	}
	return out
}

func joinSeeds(seeds []int64) string {
	s := make([]string, len(seeds))
	for i, v := range seeds {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ",")
}

// bisectVersion builds the program at version v and runs the finding's
// repro with it once per seed, each run's store and log under dir. A
// version that does not build is a row that did not build; a failure of
// the build machinery itself leaves Built false, BuildError empty and
// Errors saying why (the caller stops).
func bisectVersion(ctx context.Context, b *libversion.Builder, f findings.Finding, v string, seeds []int64, dir string, stderr io.Writer) libversion.Row {
	row := libversion.Row{Version: v}
	bin, err := b.Build(ctx, f.Module, v)
	if errors.Is(err, libversion.ErrNoBuild) {
		row.BuildError = err.Error()
		return row
	}
	if err != nil {
		row.Errors = append(row.Errors, err.Error())
		return row
	}
	row.Built = true
	if err := os.MkdirAll(dir, 0o755); err != nil {
		row.Built = false
		row.Errors = append(row.Errors, err.Error())
		return row
	}
	for _, seed := range seeds {
		code, err := runRepro(ctx, bin, f.ID, seed, dir)
		if ctx.Err() != nil {
			return row
		}
		row.Runs++
		row.Seeds = append(row.Seeds, seed)
		switch {
		case err != nil:
			row.Undecided++
			row.Errors = append(row.Errors, fmt.Sprintf("seed %d: %v", seed, err))
		case code == exitInvalid:
			row.Reproduced++
		case code == exitValid:
		case code == exitUnknown:
			row.Undecided++
		default:
			row.Undecided++
			row.Errors = append(row.Errors, fmt.Sprintf("seed %d: repro exited %d (%s)", seed, code, filepath.Join(dir, fmt.Sprintf("repro-seed%d.log", seed))))
		}
	}
	return row
}

// runRepro runs `BIN repro ID --seed S --store DIR --quiet`, its output in
// DIR/repro-seedS.log, and returns its exit code. Interrupted, it is asked
// to stop as a user's ^C would (its servers are its own to stop).
func runRepro(ctx context.Context, bin, id string, seed int64, dir string) (int, error) {
	logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("repro-seed%d.log", seed)))
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, bin, "repro", id, "--seed", fmt.Sprint(seed), "--store", dir, "--quiet")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 2 * stopWithin
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	return 0, err
}

// bisectHow says in a few words how the first version was found.
func bisectHow(res *libversion.Result, nseeds int) string {
	return fmt.Sprintf("locktorture bisect over %s..%s, %d seed(s) a version: %s", res.Versions[0], res.Versions[len(res.Versions)-1], nseeds, res.Summary)
}

// bisectDocsLine is the line to paste into docs/findings.md.
func bisectDocsLine(f findings.Finding, res *libversion.Result, nseeds int) string {
	var cells []string
	for _, r := range res.Rows {
		cells = append(cells, r.Version+" "+strings.TrimPrefix(r.Cell(), "reproduced "))
	}
	return fmt.Sprintf("Bisected (%s, %s, %d seed(s) a version): %s. Tried: %s.", f.Module, res.Versions[0]+".."+res.Versions[len(res.Versions)-1], nseeds, res.Summary, strings.Join(cells, ", "))
}
