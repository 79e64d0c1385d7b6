package libversion

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	tests := []struct {
		in      string
		want    Range
		wantErr bool
	}{
		{"", Range{}, false},
		{"v1.0.50..v1.0.79", Range{"v1.0.50", "v1.0.79"}, false},
		{"1.0.50..1.0.79", Range{"v1.0.50", "v1.0.79"}, false},
		{"v1.0.50..", Range{"v1.0.50", ""}, false},
		{"..v1.0.79", Range{"", "v1.0.79"}, false},
		{"v1.0.3", Range{"v1.0.3", "v1.0.3"}, false},
		{"v3.6.0-rc.1..v3.6.0", Range{"v3.6.0-rc.1", "v3.6.0"}, false},
		{"v1.0.79..v1.0.50", Range{}, true},
		{"latest..v1.0.79", Range{}, true},
		{"v1.0..v1.0.79", Range{}, true},
		{"v01.0.0", Range{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRange(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseRange(%q) error %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrBadRange) {
					t.Errorf("error %v does not wrap ErrBadRange", err)
				}
				return
			}
			if got != tt.want {
				t.Errorf("ParseRange(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestCompareAndSort(t *testing.T) {
	in := []string{"v1.10.0", "v1.2.0", "v1.2.0-rc.1", "v1.2.0-alpha", "v1.2.0-rc.10", "v1.2.0-rc.2", "junk", "v0.9.9", "v1.2.0"}
	want := []string{"v0.9.9", "v1.2.0-alpha", "v1.2.0-rc.1", "v1.2.0-rc.2", "v1.2.0-rc.10", "v1.2.0", "v1.10.0"}
	if got := Sort(in); !slices.Equal(got, want) {
		t.Errorf("Sort = %v, want %v", got, want)
	}
}

func TestSelect(t *testing.T) {
	// The proxy's list as go list -m -versions gives it for rueidis, in
	// a scrambled order, with a pre-release.
	all := []string{"v1.0.79", "v1.0.14-go1.18", "v1.0.19", "v1.0.34", "v1.0.50", "v1.0.53", "v1.0.55", "v1.0.59",
		"v1.0.60", "v1.0.61", "v1.0.69", "v1.0.71", "v1.0.77", "v1.0.78", "v1.1.0-rc.1", "v1.1.0"}
	tests := []struct {
		name    string
		r       Range
		ours    string
		want    []string
		wantErr string
	}{
		{"default: the last 12 stable up to ours", Range{}, "v1.0.79", []string{"v1.0.19", "v1.0.34", "v1.0.50", "v1.0.53", "v1.0.55", "v1.0.59", "v1.0.60", "v1.0.61", "v1.0.69", "v1.0.71", "v1.0.77", "v1.0.78", "v1.0.79"}[1:], ""},
		{"from and to", Range{"v1.0.60", "v1.0.71"}, "v1.0.79", []string{"v1.0.60", "v1.0.61", "v1.0.69", "v1.0.71"}, ""},
		{"from only: to ours", Range{"v1.0.71", ""}, "v1.0.77", []string{"v1.0.71", "v1.0.77"}, ""},
		{"to past ours, pre-release left out", Range{"v1.0.78", "v1.1.0"}, "v1.0.79", []string{"v1.0.78", "v1.0.79", "v1.1.0"}, ""},
		{"a pre-release end keeps pre-releases", Range{"v1.0.79", "v1.1.0-rc.1"}, "v1.0.79", []string{"v1.0.79", "v1.1.0-rc.1"}, ""},
		{"one version", Range{"v1.0.50", "v1.0.50"}, "v1.0.79", []string{"v1.0.50"}, ""},
		{"from not served", Range{"v1.0.51", ""}, "v1.0.79", nil, "does not serve v1.0.51"},
		{"to not served", Range{"", "v2.0.0"}, "v1.0.79", nil, "does not serve v2.0.0"},
		{"ours unknown", Range{}, "", nil, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(all, tt.r, tt.ours)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrBadRange) {
					t.Fatalf("Select error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Select = %v, want %v", got, tt.want)
			}
		})
	}
}

// fake is a probe over a version list: each version reproduces, does not,
// does not build, or cannot decide, and the probes it was asked for are
// counted.
type fake struct {
	yes, noBuild, undecided map[string]bool
	asked                   []string
}

func (f *fake) probe(_ context.Context, v string) (Row, error) {
	f.asked = append(f.asked, v)
	switch {
	case f.noBuild[v]:
		return Row{Version: v, BuildError: "does not build"}, nil
	case f.undecided[v]:
		return Row{Version: v, Built: true, Runs: 2, Undecided: 2}, nil
	case f.yes[v]:
		return Row{Version: v, Built: true, Runs: 2, Reproduced: 2}, nil
	}
	return Row{Version: v, Built: true, Runs: 2}, nil
}

func set(vs ...string) map[string]bool {
	m := map[string]bool{}
	for _, v := range vs {
		m[v] = true
	}
	return m
}

func TestBisect(t *testing.T) {
	vs := []string{"v1.0.0", "v1.0.1", "v1.0.2", "v1.0.3", "v1.0.4", "v1.0.5", "v1.0.6", "v1.0.7", "v1.0.8", "v1.0.9"}
	from := func(i int) map[string]bool { return set(vs[i:]...) }
	tests := []struct {
		name          string
		f             fake
		first, clean  string
		skipped       []string
		summary       string
		maxProbes     int
		wantTableCell string
	}{
		{name: "began in the middle", f: fake{yes: from(6)}, first: "v1.0.6", clean: "v1.0.5",
			summary: "first version that reproduces: v1.0.6 (v1.0.5 does not)", maxProbes: 6, wantTableCell: "v1.0.6   reproduced 2/2   <- first"},
		{name: "began at the newest", f: fake{yes: from(9)}, first: "v1.0.9", clean: "v1.0.8",
			summary: "first version that reproduces: v1.0.9", maxProbes: 6},
		{name: "began at the second", f: fake{yes: from(1)}, first: "v1.0.1", clean: "v1.0.0",
			summary: "first version that reproduces: v1.0.1", maxProbes: 6},
		{name: "reproduces everywhere: the ends do not bracket", f: fake{yes: from(0)}, first: "v1.0.0",
			summary: "reproduces at the oldest version tried, v1.0.0: it began at or before v1.0.0", maxProbes: 2},
		{name: "does not reproduce at the newest", f: fake{yes: set()},
			summary: "does not reproduce at v1.0.9, the newest version tried: nothing to search for", maxProbes: 1},
		{name: "the newest does not build", f: fake{yes: from(3), noBuild: set("v1.0.9")},
			summary: "no answer at v1.0.9", maxProbes: 1, wantTableCell: "v1.0.9   did not build"},
		{name: "a version in the middle does not build", f: fake{yes: from(5), noBuild: set("v1.0.4")}, first: "v1.0.5", clean: "v1.0.3",
			skipped: []string{"v1.0.4"}, summary: "began after v1.0.3, at or before v1.0.5 (v1.0.4 gave no answer)", maxProbes: 7, wantTableCell: "v1.0.4   did not build"},
		{name: "the search steps around one that does not build", f: fake{yes: from(6), noBuild: set("v1.0.4")}, first: "v1.0.6", clean: "v1.0.5",
			summary: "first version that reproduces: v1.0.6 (v1.0.5 does not)", maxProbes: 7},
		{name: "the oldest do not build", f: fake{yes: from(5), noBuild: set("v1.0.0", "v1.0.1")}, first: "v1.0.5", clean: "v1.0.4",
			summary: "first version that reproduces: v1.0.5", maxProbes: 6},
		{name: "nothing older answers", f: fake{yes: from(7), noBuild: set("v1.0.0", "v1.0.1", "v1.0.2", "v1.0.3", "v1.0.4", "v1.0.5", "v1.0.6")}, first: "v1.0.7",
			summary: "reproduces at v1.0.7, the oldest version tried that answered (the program did not build at v1.0.0, v1.0.4, v1.0.6, and is taken not to build at the 4 older versions not tried)", maxProbes: 5},
		{name: "undecided is skipped too", f: fake{yes: from(3), undecided: set("v1.0.2")}, first: "v1.0.3", clean: "v1.0.1",
			skipped: []string{"v1.0.2"}, summary: "gave no answer", maxProbes: 7, wantTableCell: "v1.0.2   reproduced 0/2 (2 undecided)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Bisect(context.Background(), vs, tt.f.probe)
			if err != nil {
				t.Fatal(err)
			}
			if res.First != tt.first || res.LastClean != tt.clean || !slices.Equal(res.Skipped, tt.skipped) {
				t.Errorf("first %q last clean %q skipped %v, want %q %q %v", res.First, res.LastClean, res.Skipped, tt.first, tt.clean, tt.skipped)
			}
			if !strings.Contains(res.Summary, tt.summary) {
				t.Errorf("summary %q, want it to say %q", res.Summary, tt.summary)
			}
			if len(tt.f.asked) > tt.maxProbes {
				t.Errorf("%d probes (%v), want at most %d", len(tt.f.asked), tt.f.asked, tt.maxProbes)
			}
			seen := map[string]bool{}
			for _, v := range tt.f.asked {
				if seen[v] {
					t.Errorf("probed %s twice (%v)", v, tt.f.asked)
				}
				seen[v] = true
			}
			if len(res.Rows) != len(tt.f.asked) {
				t.Errorf("%d rows for %d probes", len(res.Rows), len(tt.f.asked))
			}
			for i := 1; i < len(res.Rows); i++ {
				if Compare(res.Rows[i-1].Version, res.Rows[i].Version) >= 0 {
					t.Errorf("rows out of order: %s before %s", res.Rows[i-1].Version, res.Rows[i].Version)
				}
			}
			if tt.wantTableCell != "" && !strings.Contains(res.Table(), tt.wantTableCell) {
				t.Errorf("table lacks %q:\n%s", tt.wantTableCell, res.Table())
			}
		})
	}
}

func TestBisectOneVersion(t *testing.T) {
	f := fake{yes: set("v1.0.0")}
	res, err := Bisect(context.Background(), []string{"v1.0.0"}, f.probe)
	if err != nil {
		t.Fatal(err)
	}
	if res.First != "v1.0.0" || res.Summary != "reproduces at v1.0.0, the only version tried" || len(f.asked) != 1 {
		t.Errorf("first %q, summary %q, asked %v", res.First, res.Summary, f.asked)
	}
}

func TestBisectProbeError(t *testing.T) {
	boom := errors.New("go command missing")
	_, err := Bisect(context.Background(), []string{"v1.0.0", "v1.0.1"}, func(context.Context, string) (Row, error) { return Row{}, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want the probe's", err)
	}
}

func TestCacheKey(t *testing.T) {
	base := CacheKey("go1.26.8", "abc", []Pin{{"github.com/go-zookeeper/zk", "v1.0.3"}})
	tests := []struct {
		name string
		key  string
		same bool
	}{
		{"same inputs", CacheKey("go1.26.8", "abc", []Pin{{"github.com/go-zookeeper/zk", "v1.0.3"}}), true},
		{"other go", CacheKey("go1.26.9", "abc", []Pin{{"github.com/go-zookeeper/zk", "v1.0.3"}}), false},
		{"source changed", CacheKey("go1.26.8", "abd", []Pin{{"github.com/go-zookeeper/zk", "v1.0.3"}}), false},
		{"other version", CacheKey("go1.26.8", "abc", []Pin{{"github.com/go-zookeeper/zk", "v1.0.2"}}), false},
		{"a companion pinned", CacheKey("go1.26.8", "abc", []Pin{{"github.com/go-zookeeper/zk", "v1.0.3"}, {"github.com/go-zookeeper/zk/x", "v1.0.3"}}), false},
	}
	for _, tt := range tests {
		if (tt.key == base) != tt.same {
			t.Errorf("%s: key equal to base %v, want %v", tt.name, tt.key == base, tt.same)
		}
	}
	b := &Builder{Cache: "/c"}
	if got, want := b.Dir("go.etcd.io/etcd/client/v3", "v3.5.0"), "/c/go.etcd.io!etcd!client!v3@v3.5.0"; got != want {
		t.Errorf("Dir = %q, want %q", got, want)
	}
}

func TestPins(t *testing.T) {
	deps := map[string]string{
		"go.etcd.io/etcd/client/v3":     "v3.5.35",
		"go.etcd.io/etcd/api/v3":        "v3.5.35",
		"go.etcd.io/etcd/client/pkg/v3": "v3.5.35",
		"go.etcd.io/etcd/server/v3":     "v3.5.1", // another release line: not pinned
		"github.com/redis/rueidis":      "v1.0.79",
		"github.com/redis/go-redis/v9":  "v9.23.0",
	}
	tests := []struct {
		module, version string
		want            []Pin
	}{
		{"go.etcd.io/etcd/client/v3", "v3.5.10", []Pin{{"go.etcd.io/etcd/client/v3", "v3.5.10"}, {"go.etcd.io/etcd/api/v3", "v3.5.10"}, {"go.etcd.io/etcd/client/pkg/v3", "v3.5.10"}}},
		{"github.com/redis/rueidis", "v1.0.50", []Pin{{"github.com/redis/rueidis", "v1.0.50"}}},
		{"example.com/unused", "v1.0.0", []Pin{{"example.com/unused", "v1.0.0"}}},
	}
	for _, tt := range tests {
		if got := Pins(deps, tt.module, tt.version); !slices.Equal(got, tt.want) {
			t.Errorf("Pins(%s, %s) = %v, want %v", tt.module, tt.version, got, tt.want)
		}
	}
}

func TestFindSource(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module "+SelfModule+"\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, start, want string
		wantErr                bool
	}{
		{"from below the root", "", deep, root, false},
		{"given", root, other, root, false},
		{"given, not ours", other, deep, "", true},
		{"none above", "", other, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindSource(tt.dir, tt.start)
			if (err != nil) != tt.wantErr {
				t.Fatalf("FindSource error %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrNoSource) {
				t.Errorf("error %v does not wrap ErrNoSource", err)
			}
			if got != tt.want {
				t.Errorf("FindSource = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestScratchGoMod(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module "+SelfModule+"\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := scratchGoMod(src, []Pin{{"github.com/go-zookeeper/zk", "v1.0.3"}})
	for _, want := range []string{"go 1.26.0\n", "replace " + SelfModule + " => " + src + "\n", "replace github.com/go-zookeeper/zk => github.com/go-zookeeper/zk v1.0.3\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("scratch go.mod lacks %q:\n%s", want, got)
		}
	}
}

func TestBuildSummary(t *testing.T) {
	tests := []struct{ out, want string }{
		{"go: downloading x v1\ngo: finding module for package y\ngo: found y in z v2\n# github.com/locktorture/locktorture/backends\nbackends/etcd.go:393:22: cannot convert\n", "backends/etcd.go:393:22: cannot convert"},
		{"go: downloading x v1\ngo: github.com/x@v9.9.9: invalid version: unknown revision v9.9.9\n", "go: github.com/x@v9.9.9: invalid version: unknown revision v9.9.9"},
		{"a.go:1: one\nb.go:2: two\nc.go:3: three\n", "a.go:1: one; b.go:2: two"},
		{"", "the go command failed"},
	}
	for _, tt := range tests {
		if got := buildSummary(tt.out); got != tt.want {
			t.Errorf("buildSummary(%q) = %q, want %q", tt.out, got, tt.want)
		}
	}
}
