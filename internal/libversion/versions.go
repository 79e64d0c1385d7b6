// Package libversion is the library-version axis of a Go library row: the
// versions of a Go module the module proxy serves, this program rebuilt
// against any one of them (a scratch module that pins it, cached per
// version), and the binary search `locktorture bisect` runs over them.
package libversion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// ErrBadRange is wrapped by every error about a --versions range or a
// version the module proxy does not serve: the user's input, not the
// harness.
var ErrBadRange = errors.New("bad version range")

// DefaultCount is how many versions a range with no FROM covers: the last
// DefaultCount stable releases up to TO.
const DefaultCount = 12

// Range is a --versions FROM..TO: either end may be empty (FROM: the
// DefaultCount-th stable release below TO; TO: the version this program
// is built with).
type Range struct {
	From, To string
}

// String is the range as typed.
func (r Range) String() string { return r.From + ".." + r.To }

// ParseRange reads FROM..TO, FROM.., ..TO or a single version V (V..V);
// "" is the whole default range. Each end is a module version ("v1.0.50";
// the leading v may be left out).
func ParseRange(s string) (Range, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Range{}, nil
	}
	from, to, two := strings.Cut(s, "..")
	if !two {
		to = from
	}
	var r Range
	for _, p := range []struct {
		dst *string
		src string
	}{{&r.From, from}, {&r.To, to}} {
		v := strings.TrimSpace(p.src)
		if v == "" {
			continue
		}
		if !strings.HasPrefix(v, "v") {
			v = "v" + v
		}
		if !Valid(v) {
			return Range{}, fmt.Errorf("%w: --versions %q: %q is not a module version (FROM..TO, e.g. v1.0.50..v1.0.79)", ErrBadRange, s, p.src)
		}
		*p.dst = v
	}
	if r.From != "" && r.To != "" && Compare(r.From, r.To) > 0 {
		return Range{}, fmt.Errorf("%w: --versions %q: FROM is newer than TO", ErrBadRange, s)
	}
	return r, nil
}

// Select returns the versions of all (the module proxy's, any order) that
// r covers, oldest first. An empty To is ours (the version this program is
// built with); an empty From keeps the last DefaultCount. Pre-releases
// (v1.2.0-rc.1) are left out unless an end of the range is one. An end
// the proxy does not serve is an error wrapping ErrBadRange.
func Select(all []string, r Range, ours string) ([]string, error) {
	to := r.To
	if to == "" {
		to = ours
	}
	if to == "" {
		return nil, fmt.Errorf("%w: no TO version given and this program's own version of the module is unknown", ErrBadRange)
	}
	sorted := Sort(all)
	for _, end := range []string{r.From, r.To} {
		if end != "" && !contains(sorted, end) {
			return nil, fmt.Errorf("%w: the module proxy does not serve %s (it serves %s)", ErrBadRange, end, summary(sorted))
		}
	}
	pre := prerelease(r.From) != "" || prerelease(to) != ""
	var out []string
	for _, v := range sorted {
		if Compare(v, to) > 0 || (r.From != "" && Compare(v, r.From) < 0) {
			continue
		}
		if prerelease(v) != "" && !pre && v != r.From && v != to {
			continue
		}
		out = append(out, v)
	}
	if r.From == "" && len(out) > DefaultCount {
		out = out[len(out)-DefaultCount:]
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no version of the module in %s (the proxy serves %s)", ErrBadRange, Range{r.From, to}, summary(sorted))
	}
	return out, nil
}

func contains(list []string, v string) bool {
	for _, w := range list {
		if w == v {
			return true
		}
	}
	return false
}

// summary names the oldest and newest of sorted versions and their count.
func summary(sorted []string) string {
	switch len(sorted) {
	case 0:
		return "no versions"
	case 1:
		return sorted[0]
	}
	return fmt.Sprintf("%d versions, %s to %s", len(sorted), sorted[0], sorted[len(sorted)-1])
}

// List asks the module proxy (through the go command, as GOPROXY says)
// for every version of module it serves, oldest first.
func List(ctx context.Context, module string) ([]string, error) {
	dir, err := os.MkdirTemp("", "locktorture-versions-")
	if err != nil {
		return nil, fmt.Errorf("libversion: %w", err)
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-versions", "-json", module)
	cmd.Dir = dir // outside any module: the proxy's list, not a go.mod's
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("libversion: go list -m -versions %s: %w: %s", module, err, firstLine(stderr.String()))
	}
	var m struct {
		Path     string
		Versions []string
	}
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("libversion: go list -m -versions %s: %w", module, err)
	}
	if len(m.Versions) == 0 {
		return nil, fmt.Errorf("libversion: the module proxy lists no versions of %s", module)
	}
	return Sort(m.Versions), nil
}

// WithEnds returns all with the ends of r added that the module proxy
// serves although its list (all, from List) leaves them out: the proxy's
// list of a module's versions may miss some that it serves when asked by
// name (here: rueidis v1.0.70). An end it does not serve stays out, for
// Select to refuse.
func WithEnds(ctx context.Context, module string, all []string, r Range) []string {
	out := slices.Clone(all)
	for _, end := range []string{r.From, r.To} {
		if end == "" || slices.Contains(out, end) {
			continue
		}
		if Served(ctx, module, end) {
			out = append(out, end)
		}
	}
	return Sort(out)
}

// Served reports whether the module proxy serves module at version
// (`go list -m MODULE@VERSION`).
func Served(ctx context.Context, module, version string) bool {
	dir, err := os.MkdirTemp("", "locktorture-versions-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-json", module+"@"+version)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		return false
	}
	var m struct{ Version string }
	return json.Unmarshal(out, &m) == nil && m.Version == version
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// Sort returns the valid versions of vs, oldest first (semantic version
// order), without repeats.
func Sort(vs []string) []string {
	var out []string
	for _, v := range vs {
		if Valid(v) && !contains(out, v) {
			out = append(out, v)
		}
	}
	// Insertion sort: version lists are short.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && Compare(out[j-1], out[j]) > 0; j-- {
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

// semver is a parsed vMAJOR.MINOR.PATCH[-PRERELEASE][+BUILD].
type semver struct {
	nums [3]int
	pre  string
}

func parse(v string) (semver, bool) {
	var s semver
	if !strings.HasPrefix(v, "v") {
		return s, false
	}
	v = v[1:]
	if i := strings.IndexByte(v, '+'); i >= 0 {
		v = v[:i]
	}
	core, pre, _ := strings.Cut(v, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return s, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || (len(p) > 1 && p[0] == '0') {
			return s, false
		}
		s.nums[i] = n
	}
	if strings.Contains(v, "-") && pre == "" {
		return s, false
	}
	s.pre = pre
	return s, true
}

// Valid reports whether v is a module version (vMAJOR.MINOR.PATCH, an
// optional -pre-release and +build).
func Valid(v string) bool { _, ok := parse(v); return ok }

func prerelease(v string) string { s, _ := parse(v); return s.pre }

// Compare orders two versions as semantic versioning does: -1, 0 or +1
// (an invalid version is older than any valid one).
func Compare(a, b string) int {
	x, okx := parse(a)
	y, oky := parse(b)
	switch {
	case !okx && !oky:
		return strings.Compare(a, b)
	case !okx:
		return -1
	case !oky:
		return 1
	}
	for i := range x.nums {
		if c := cmpInt(x.nums[i], y.nums[i]); c != 0 {
			return c
		}
	}
	switch {
	case x.pre == y.pre:
		return 0
	case x.pre == "":
		return 1
	case y.pre == "":
		return -1
	}
	xs, ys := strings.Split(x.pre, "."), strings.Split(y.pre, ".")
	for i := 0; i < len(xs) && i < len(ys); i++ {
		xn, errx := strconv.Atoi(xs[i])
		yn, erry := strconv.Atoi(ys[i])
		var c int
		switch {
		case errx == nil && erry == nil:
			c = cmpInt(xn, yn)
		case errx == nil:
			c = -1 // numeric identifiers sort before alphanumeric ones
		case erry == nil:
			c = 1
		default:
			c = strings.Compare(xs[i], ys[i])
		}
		if c != 0 {
			return c
		}
	}
	return cmpInt(len(xs), len(ys))
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
