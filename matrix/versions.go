package matrix

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/cluster"
)

// Version is one set of servers a matrix's cells run with: the images of
// each kind (docker mode) and the Redis server program. A matrix with
// versions runs every cell once per set, and its report puts the sets side
// by side.
type Version struct {
	// Name is the set's column heading ("bullseye", "valkey").
	Name string `json:"name" yaml:"name"`
	// Images are the images by kind (redis, postgres, ..., or all), over
	// the scenarios' own.
	Images map[string]string `json:"images,omitempty" yaml:"images,omitempty"`
	// RedisProgram is the Redis server program: redis (the default) or
	// valkey.
	RedisProgram string `json:"redis_program,omitempty" yaml:"redis_program,omitempty"`
}

// args are the run flags that choose the set (--image KIND=REF, sorted by
// kind, and --redis-program).
func (v Version) args() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(v.Images)) {
		out = append(out, "--image", k+"="+v.Images[k])
	}
	if v.RedisProgram != "" {
		out = append(out, "--redis-program", v.RedisProgram)
	}
	return out
}

// VersionsFromImages makes the version sets of `--images KIND=REF,REF,...`
// flags (kind to its refs): the i-th set takes the i-th ref of each kind,
// and a kind with one ref gives it to every set; any other count is an
// error. A set is named by its refs' tag ("bullseye" for
// locktorture-servers:bullseye) when they share one, else by the refs.
func VersionsFromImages(images map[string][]string) ([]Version, error) {
	n := 1
	kinds := slices.Sorted(maps.Keys(images))
	for _, k := range kinds {
		refs := images[k]
		if len(refs) == 0 {
			return nil, fmt.Errorf("%w: --images %s=: no image", errPlan, k)
		}
		if len(refs) > 1 && n > 1 && len(refs) != n {
			return nil, fmt.Errorf("%w: --images: %s names %d images, another kind %d: give each kind one image or as many as the others", errPlan, k, len(refs), n)
		}
		n = max(n, len(refs))
	}
	out := make([]Version, 0, n)
	seen := map[string]bool{}
	for i := range n {
		v := Version{Images: map[string]string{}}
		var tags, refs []string
		for _, k := range kinds {
			ref := images[k][0]
			if len(images[k]) > 1 {
				ref = images[k][i]
			}
			v.Images[k] = ref
			refs = append(refs, k+"="+ref)
			tag := ref
			if j := strings.LastIndex(ref, ":"); j >= 0 && !strings.Contains(ref[j:], "/") {
				tag = ref[j+1:]
			}
			if !slices.Contains(tags, tag) {
				tags = append(tags, tag)
			}
		}
		v.Name = strings.Join(tags, "+")
		if len(tags) > 1 || seen[v.Name] {
			v.Name = strings.Join(refs, ",")
		}
		if seen[v.Name] {
			return nil, fmt.Errorf("%w: --images: the set %s is named twice", errPlan, v.Name)
		}
		seen[v.Name] = true
		out = append(out, v)
	}
	return out, nil
}

// checkVersions refuses version sets without a name, with a name twice,
// or with a Redis program other than redis or valkey.
func checkVersions(vs []Version) error {
	seen := map[string]bool{}
	for i, v := range vs {
		switch {
		case strings.TrimSpace(v.Name) == "":
			return fmt.Errorf("%w: version set %d has no name", errPlan, i+1)
		case seen[v.Name]:
			return fmt.Errorf("%w: version set %q is named twice", errPlan, v.Name)
		case v.RedisProgram != "" && v.RedisProgram != cluster.RedisProgramRedis && v.RedisProgram != cluster.RedisProgramValkey:
			return fmt.Errorf("%w: version set %q: redis_program must be redis or valkey, not %q", errPlan, v.Name, v.RedisProgram)
		}
		seen[v.Name] = true
	}
	return nil
}

// VersionDiff is a scenario/backend pair whose verdicts differ between
// version sets: what each set gave.
type VersionDiff struct {
	Scenario, Backend, Fencing string
	// Verdicts are each set's verdicts, by set name (several seeds:
	// their verdicts, joined with "/").
	Verdicts map[string]string
}

// String is "scenario / backend: bullseye valid, trixie invalid".
func (d VersionDiff) String() string {
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(d.Verdicts)) {
		parts = append(parts, v+" "+d.Verdicts[v])
	}
	b := d.Backend
	if d.Fencing != "" {
		b += ", fencing " + d.Fencing
	}
	return fmt.Sprintf("%s / %s: %s", d.Scenario, b, strings.Join(parts, ", "))
}

// VersionDiffs lists the scenario/backend pairs whose verdicts differ
// between the matrix's version sets (a harness error counts as a verdict),
// in cell order; none without versions.
func (m *Matrix) VersionDiffs() []VersionDiff {
	if len(m.Versions) < 2 {
		return nil
	}
	type pair struct{ s, b, f string }
	var order []pair
	by := map[pair]map[string][]string{}
	for _, c := range m.Cells {
		p := pair{c.Scenario, c.Backend, c.Fencing}
		if by[p] == nil {
			by[p] = map[string][]string{}
			order = append(order, p)
		}
		by[p][c.Version] = append(by[p][c.Version], c.Verdict)
	}
	var out []VersionDiff
	for _, p := range order {
		got := map[string]string{}
		distinct := map[string]bool{}
		for v, verdicts := range by[p] {
			sort.Strings(verdicts)
			got[v] = strings.Join(slices.Compact(verdicts), "/")
			distinct[got[v]] = true
		}
		if len(distinct) > 1 {
			out = append(out, VersionDiff{Scenario: p.s, Backend: p.b, Fencing: p.f, Verdicts: got})
		}
	}
	return out
}

// ServerVersionText is what a cell's servers reported, in short: each
// distinct version once, its number alone ("6.0.16"; "13.16" for "13.16
// (Debian 13.16-0+deb11u1)"; "10.5.23" for "10.5.23-MariaDB-0+deb11u1";
// "valkey 8.1.1"; "13.16, 3.4.13" for servers of two kinds), sorted; empty
// when none said. ServerVersions keeps them whole.
func (c Cell) ServerVersionText() string {
	var vs []string
	for _, v := range c.ServerVersions {
		v = shortVersion(v)
		if !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	sort.Strings(vs)
	return strings.Join(vs, ", ")
}

// versionsFile is a versions file: `versions:`, a list of sets.
type versionsFile struct {
	Versions []Version `yaml:"versions"`
}

// ReadVersions reads a versions file (YAML: `versions:` with a list of
// {name, images: {KIND: REF}, redis_program}); unknown keys are refused.
func ReadVersions(path string) ([]Version, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: --versions: %w", errPlan, err)
	}
	var f versionsFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: --versions %s: %w", errPlan, path, err)
	}
	if len(f.Versions) == 0 {
		return nil, fmt.Errorf("%w: --versions %s: no version sets (versions: [{name: ..., images: {all: ...}}, ...])", errPlan, path)
	}
	if err := checkVersions(f.Versions); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Versions, nil
}

// shortVersion is a reported version's number ("10.5.23" of
// "10.5.23-MariaDB-0+deb11u1"), after a leading word when there is one
// ("valkey 8.1.1"); the whole string when it starts with no number.
func shortVersion(v string) string {
	prefix, rest := "", v
	if w, r, ok := strings.Cut(v, " "); ok && w != "" && (w[0] < '0' || w[0] > '9') {
		prefix, rest = w+" ", r
	}
	n := 0
	for n < len(rest) && (rest[n] == '.' || rest[n] >= '0' && rest[n] <= '9') {
		n++
	}
	if n == 0 {
		return v
	}
	return prefix + strings.TrimRight(rest[:n], ".")
}
