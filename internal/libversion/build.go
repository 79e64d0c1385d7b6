package libversion

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// SelfModule is this program's module path: the scratch module requires
// it, replaced by the source tree.
const SelfModule = "github.com/locktorture/locktorture"

// mainPackage is the command a scratch module builds.
const mainPackage = SelfModule + "/cmd/locktorture"

// ErrNoSource is returned when no locktorture source tree is at hand: a
// library version is this program rebuilt against it, which needs the
// source.
var ErrNoSource = errors.New("no locktorture source tree at hand (run inside a checkout, or set LOCKTORTURE_SOURCE=DIR; bisect: --source DIR): a library version is this program rebuilt against it")

// ErrNoBuild is wrapped by Build's error when the go command could not
// build the program at that version (the library's API changed, or the
// version could not be fetched): a row that "did not build", not a
// harness failure.
var ErrNoBuild = errors.New("does not build")

// FindSource returns the locktorture source tree: dir when it is given
// (it must hold the module's go.mod), else the nearest directory at or
// above start whose go.mod is this program's module. ErrNoSource when
// there is none.
func FindSource(dir, start string) (string, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", fmt.Errorf("libversion: %w", err)
		}
		if modulePath(filepath.Join(abs, "go.mod")) != SelfModule {
			return "", fmt.Errorf("%w: %s holds no go.mod of module %s", ErrNoSource, abs, SelfModule)
		}
		return abs, nil
	}
	abs, err := filepath.Abs(start)
	if err != nil {
		return "", fmt.Errorf("libversion: %w", err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		if modulePath(filepath.Join(d, "go.mod")) == SelfModule {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", ErrNoSource
		}
	}
}

// modulePath reads a go.mod's module line ("" when there is none).
func modulePath(gomod string) string {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// Pin is one module held at a version in a scratch module (a replace with
// a version, which overrides minimal version selection: an older version
// than the source's go.mod asks for is used as it is).
type Pin struct {
	Module, Version string
}

// Builder builds this program against other versions of a Go module.
type Builder struct {
	// Source is the locktorture source tree (FindSource).
	Source string
	// Cache is where scratch modules and their binaries are kept
	// (CacheDir()).
	Cache string
	// Log, when set, is told what is built.
	Log io.Writer

	deps map[string]string // the source's build list, path -> version
	hash string            // the source's content hash
	gov  string            // the go command's version
}

// CacheDir is where built versions are kept:
// $XDG_CACHE_HOME/locktorture/libversions (~/.cache/... without it).
func CacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("libversion: no cache directory: %w", err)
	}
	return filepath.Join(base, "locktorture", "libversions"), nil
}

// Ours returns the version of module the source tree's build list has
// ("" when the program does not use it).
func (b *Builder) Ours(ctx context.Context, module string) (string, error) {
	if err := b.load(ctx); err != nil {
		return "", err
	}
	return b.deps[module], nil
}

// load reads, once, the source's build list, content hash and go version.
func (b *Builder) load(ctx context.Context) error {
	if b.deps != nil {
		return nil
	}
	// Three go commands, each a few seconds on a busy machine: side by
	// side.
	var (
		wg               sync.WaitGroup
		out, gov         []byte
		hash             string
		lerr, herr, gerr error
	)
	wg.Go(func() { out, lerr = b.goCmd(ctx, b.Source, "list", "-m", "-f", "{{.Path}} {{.Version}}", "all") })
	wg.Go(func() { hash, herr = SourceHash(ctx, b.Source) })
	wg.Go(func() { gov, gerr = b.goCmd(ctx, b.Source, "env", "GOVERSION") })
	wg.Wait()
	if err := errors.Join(lerr, herr, gerr); err != nil {
		return err
	}
	deps := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if p, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && v != "" {
			deps[p] = v
		}
	}
	b.deps, b.hash, b.gov = deps, hash, strings.TrimSpace(string(gov))
	return nil
}

// goCmd runs the go command in dir, its output or an error with its
// stderr's first line.
func (b *Builder) goCmd(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("libversion: go %s (in %s): %w: %s", strings.Join(args, " "), dir, err, firstLine(stderr.String()))
	}
	return out, nil
}

// Pins are the modules a build at version holds: module itself, and the
// modules released with it — those of the same repository (the first
// path elements: go.etcd.io/etcd, github.com/OWNER/REPO) that the source
// builds at the same version as module (etcd's api/v3 and client/pkg/v3
// beside client/v3), as a user pinning the library would get them.
func Pins(deps map[string]string, module, version string) []Pin {
	pins := []Pin{{module, version}}
	ours := deps[module]
	if ours == "" {
		return pins
	}
	repo := repoPrefix(module)
	var sib []string
	for p, v := range deps {
		if p != module && v == ours && (p == repo || strings.HasPrefix(p, repo+"/")) {
			sib = append(sib, p)
		}
	}
	sort.Strings(sib)
	for _, p := range sib {
		pins = append(pins, Pin{p, version})
	}
	return pins
}

// repoPrefix is a module path's repository: its first three elements on
// the code hosts that name owner and repository, else its first two.
func repoPrefix(module string) string {
	parts := strings.Split(module, "/")
	n := 2
	switch parts[0] {
	case "github.com", "gitlab.com", "bitbucket.org", "codeberg.org":
		n = 3
	}
	if len(parts) < n {
		n = len(parts)
	}
	return strings.Join(parts[:n], "/")
}

// CacheKey names one build: the go command's version, the source tree's
// content hash and the pins. A binary built under another key is stale.
func CacheKey(goVersion, sourceHash string, pins []Pin) string {
	h := sha256.New()
	fmt.Fprintf(h, "go %s\nsource %s\nflags %s\n", goVersion, sourceHash, strings.Join(buildFlags, " "))
	for _, p := range pins {
		fmt.Fprintf(h, "pin %s %s\n", p.Module, p.Version)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// SourceHash hashes what a build of the command reads from the source
// tree: go.mod, go.sum and every file (Go, assembly, C, embedded) of the
// command's packages in the module, as the go command lists them.
func SourceHash(ctx context.Context, source string) (string, error) {
	const tmpl = `{{if and .Module .Module.Main}}{{.Dir}}{{range .GoFiles}}	{{.}}{{end}}{{range .CgoFiles}}	{{.}}{{end}}{{range .SFiles}}	{{.}}{{end}}{{range .CFiles}}	{{.}}{{end}}{{range .HFiles}}	{{.}}{{end}}{{range .EmbedFiles}}	{{.}}{{end}}{{end}}`
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-f", tmpl, "./cmd/locktorture")
	cmd.Dir = source
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("libversion: go list -deps in %s: %w: %s", source, err, firstLine(stderr.String()))
	}
	files := []string{"go.mod", "go.sum"}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 2 {
			continue
		}
		rel, err := filepath.Rel(source, f[0])
		if err != nil {
			return "", fmt.Errorf("libversion: %w", err)
		}
		for _, name := range f[1:] {
			files = append(files, filepath.Join(rel, name))
		}
	}
	sort.Strings(files)
	h := sha256.New()
	for _, rel := range files {
		data, err := os.ReadFile(filepath.Join(source, rel))
		if err != nil {
			return "", fmt.Errorf("libversion: source hash: %w", err)
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(h, "%s %x\n", filepath.ToSlash(rel), sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// escape makes a module path one directory name.
func escape(module string) string { return strings.ReplaceAll(module, "/", "!") }

// Dir is the scratch module of module at version under the cache.
func (b *Builder) Dir(module, version string) string {
	return filepath.Join(b.Cache, escape(module)+"@"+version)
}

// Build returns this program built with module at version (and the
// modules released with it: Pins), from the cache when the source, the go
// command and the pins are unchanged since it was built. An error wrapping
// ErrNoBuild, with the compiler's first lines, when the go command cannot
// build it; it is kept in the scratch module's build.log.
func (b *Builder) Build(ctx context.Context, module, version string) (string, error) {
	if err := b.load(ctx); err != nil {
		return "", err
	}
	pins := Pins(b.deps, module, version)
	key := CacheKey(b.gov, b.hash, pins)
	dir := b.Dir(module, version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("libversion: %w", err)
	}
	// One build of a version at a time, across processes.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("libversion: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("libversion: lock %s: %w", dir, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck

	bin := filepath.Join(dir, "locktorture")
	stamp := filepath.Join(dir, "key")
	if k, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(k)) == key {
		if _, err := os.Stat(bin); err == nil {
			return bin, nil
		}
	}
	// A failed build is not cached: it may have been the network.
	_ = os.Remove(stamp)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(scratchGoMod(b.Source, pins)), 0o644); err != nil {
		return "", fmt.Errorf("libversion: %w", err)
	}
	sum, err := os.ReadFile(filepath.Join(b.Source, "go.sum"))
	if err != nil {
		return "", fmt.Errorf("libversion: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		return "", fmt.Errorf("libversion: %w", err)
	}
	if b.Log != nil {
		fmt.Fprintf(b.Log, "building locktorture with %s@%s (%s)\n", module, version, dir)
	}
	cmd := buildCommand(ctx, append(append([]string{"build"}, buildFlags...), "-o", bin+".tmp", mainPackage))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false")
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(filepath.Join(dir, "build.log"), out, 0o644)
	if err != nil {
		_ = os.Remove(bin + ".tmp")
		if ctx.Err() != nil {
			return "", fmt.Errorf("libversion: build %s@%s: %w", module, version, ctx.Err())
		}
		return "", fmt.Errorf("%w at %s (%s): %s", ErrNoBuild, version, filepath.Join(dir, "build.log"), buildSummary(string(out)))
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", fmt.Errorf("libversion: %w", err)
	}
	if err := os.WriteFile(stamp, []byte(key+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("libversion: %w", err)
	}
	return bin, nil
}

// buildFlags are the go build flags of a version's program: no symbol
// table and no DWARF (-s -w), which a version's run does not read (its
// library version is in its build information, which stays) and whose
// writing is a good part of the link; the packages compile as for
// bin/locktorture, so the go command's cache serves every package the
// library is not under.
var buildFlags = []string{"-ldflags=-s -w"}

// buildCommand is the go command with args, run at a lower priority
// (nice, when there is one): a version builds while the comparison's
// cells run, and those are what must keep their time.
func buildCommand(ctx context.Context, args []string) *exec.Cmd {
	if nice, err := exec.LookPath("nice"); err == nil {
		return exec.CommandContext(ctx, nice, append([]string{"-n", "10", "go"}, args...)...)
	}
	return exec.CommandContext(ctx, "go", args...)
}

// scratchGoMod is the scratch module's go.mod: it requires this program,
// replaced by the source tree, with each pin replaced by its version.
func scratchGoMod(source string, pins []Pin) string {
	var s strings.Builder
	s.WriteString("// Written by locktorture (internal/libversion): this program built against\n// another version of a library. Safe to delete.\nmodule locktorture.local/libversion\n\n")
	if gv := goDirective(filepath.Join(source, "go.mod")); gv != "" {
		fmt.Fprintf(&s, "go %s\n\n", gv)
	}
	fmt.Fprintf(&s, "require %s v0.0.0-00010101000000-000000000000\n\n", SelfModule)
	fmt.Fprintf(&s, "replace %s => %s\n", SelfModule, source)
	for _, p := range pins {
		fmt.Fprintf(&s, "\nreplace %s => %s %s\n", p.Module, p.Module, p.Version)
	}
	return s.String()
}

// goDirective reads a go.mod's go line.
func goDirective(gomod string) string {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "go" {
			return f[1]
		}
	}
	return ""
}

// buildSummary is the first lines of a failed build that say why: the
// compiler's errors, not the go command's "downloading" and "finding"
// (its own lines only when nothing else is said).
func buildSummary(out string) string {
	var keep, goLines []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "# "):
		case strings.HasPrefix(line, "go: "):
			if !strings.HasPrefix(line, "go: downloading") && !strings.HasPrefix(line, "go: finding") && !strings.HasPrefix(line, "go: found") {
				goLines = append(goLines, line)
			}
		default:
			keep = append(keep, line)
		}
	}
	if len(keep) == 0 {
		keep = goLines
	}
	if len(keep) == 0 {
		return "the go command failed"
	}
	return strings.Join(keep[:min(2, len(keep))], "; ")
}
