package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/locktorture/locktorture/internal/libversion"
	"github.com/locktorture/locktorture/matrix"
)

func TestLibraryArgs(t *testing.T) {
	tests := []struct {
		args       []string
		libs, rest []string
	}{
		{[]string{"--families", "pause", "--library", "github.com/redis/rueidis@v1.0.50", "--quiet"}, []string{"github.com/redis/rueidis@v1.0.50"}, []string{"--families", "pause", "--quiet"}},
		{[]string{"-library=m@v1,v2", "--library", "n@v3"}, []string{"m@v1,v2", "n@v3"}, nil},
		{[]string{"--families", "pause"}, nil, []string{"--families", "pause"}},
	}
	for _, tt := range tests {
		libs, rest, ok := libraryArgs(tt.args)
		if ok != (len(tt.libs) > 0) || !slices.Equal(libs, tt.libs) || !slices.Equal(rest, tt.rest) {
			t.Errorf("libraryArgs(%q) = %q, %q, %v; want %q, %q", tt.args, libs, rest, ok, tt.libs, tt.rest)
		}
	}
}

// TestCompareFlagArgs: a version's comparison gets the user's flags but
// its own store and rows, and no --exec rows; a bool flag takes no value.
func TestCompareFlagArgs(t *testing.T) {
	args := []string{"--quiet", "--families", "renew-partition", "--store=/s", "--backends", "zk-lock,redis-token", "--exec", "mine=prog x", "--seeds", "1"}
	fas := compareFlagArgs(args)
	if got := flagValue(fas, "backends"); got != "zk-lock,redis-token" {
		t.Errorf("backends %q", got)
	}
	if got := flagValue(fas, "store"); got != "/s" {
		t.Errorf("store %q", got)
	}
	got := withFlags(fas, []string{"store", "backends", "exec"}, "--store", "/p", "--backends", "zk-lock")
	want := []string{"--quiet", "--families", "renew-partition", "--seeds", "1", "--store", "/p", "--backends", "zk-lock"}
	if !slices.Equal(got, want) {
		t.Errorf("withFlags = %q, want %q", got, want)
	}
	if !*boolFlag(fas, "quiet") || *boolFlag(fas, "plan") {
		t.Errorf("quiet %v plan %v", *boolFlag(fas, "quiet"), *boolFlag(fas, "plan"))
	}
}

// TestJoinVersion: a version's rows come in as ROW@V right after ROW (and
// after ROW's earlier versions), with their cells, plan and skips.
func TestJoinVersion(t *testing.T) {
	m := &matrix.Matrix{Backends: []string{"redis-token", "zk-lock", "etcd"}, Scenarios: []string{"baseline"},
		Cells: []matrix.Cell{{CellKey: matrix.CellKey{Scenario: "baseline", Backend: "zk-lock", Seed: 1}}}}
	for _, v := range []string{"v1.0.2", "v1.0.3"} {
		pm := &matrix.Matrix{Backends: []string{"zk-lock"}, Scenarios: []string{"baseline", "renew-partition"},
			Planned: []matrix.CellKey{{Scenario: "renew-partition", Backend: "zk-lock", Seed: 1}},
			Skipped: []matrix.Skipped{{Scenario: "x", Backend: "zk-lock", Why: "no"}},
			Cells:   []matrix.Cell{{CellKey: matrix.CellKey{Scenario: "renew-partition", Backend: "zk-lock", Seed: 1}}}}
		joinVersion(m, pm, v)
	}
	if want := []string{"redis-token", "zk-lock", "zk-lock@v1.0.2", "zk-lock@v1.0.3", "etcd"}; !slices.Equal(m.Backends, want) {
		t.Errorf("backends %v, want %v", m.Backends, want)
	}
	if len(m.Cells) != 3 || m.Cells[1].Backend != "zk-lock@v1.0.2" || m.Cells[2].Backend != "zk-lock@v1.0.3" {
		t.Errorf("cells %+v", m.Cells)
	}
	if len(m.Planned) != 2 || m.Planned[0].Backend != "zk-lock@v1.0.2" || len(m.Skipped) != 2 || m.Skipped[1].Backend != "zk-lock@v1.0.3" {
		t.Errorf("planned %+v skipped %+v", m.Planned, m.Skipped)
	}
	if !slices.Equal(m.Scenarios, []string{"baseline", "renew-partition"}) {
		t.Errorf("scenarios %v", m.Scenarios)
	}
}

// TestCompareLibraryBadInput: refused before anything is built or run.
func TestCompareLibraryBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no version", []string{"compare", "--library", "github.com/redis/rueidis"}, "want MODULE@V1,V2"},
		{"no row uses it", []string{"compare", "--library", "github.com/bsm/nothing@v1.0.0"}, "no row's library is that Go module"},
		{"not a version", []string{"compare", "--library", "github.com/go-zookeeper/zk@latest"}, "is not a version"},
		{"rows left out by --backends", []string{"compare", "--backends", "redis-token", "--library", "github.com/go-zookeeper/zk@v1.0.3"}, "none of --backends uses it"},
		{"with --shard", []string{"compare", "--shard", "1/2", "--library", "github.com/go-zookeeper/zk@v1.0.3"}, "not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			if code != exitBadArgs {
				t.Fatalf("exit %d, want %d: %s%s", code, exitBadArgs, out, errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr %q, want it to say %q", errOut, tt.want)
			}
		})
	}
}

// TestCompareLibraryOnePool runs a version axis end to end, the versions'
// programs stood in for by this program (the go command is not run): every
// version's rows land in the one results.json beside their row, each cell
// as its version's own comparison judged it (verdict, as expected, known
// finding); a version that does not build is said by name, its rows left
// out, and the others run.
func TestCompareLibraryOnePool(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cells against redis-server: not with -short")
	}
	requireRedis(t)
	const module = "github.com/redis/rueidis"
	if _, err := libversion.List(context.Background(), module); err != nil {
		t.Skipf("the module proxy cannot be reached: %v", err)
	}
	oldSelf, oldBuild := selfProgram, buildVersion
	t.Cleanup(func() { selfProgram, buildVersion = oldSelf, oldBuild })
	selfProgram = func() (string, error) { return binPath, nil }
	var mu sync.Mutex
	var built []string
	buildVersion = func(_ context.Context, _ *libversion.Builder, mod, version string) (string, error) {
		mu.Lock()
		built = append(built, mod+"@"+version)
		mu.Unlock()
		if version == "v1.0.71" {
			return "", fmt.Errorf("%w at %s (build.log): backends/rueidis.go:1: undefined: rueidislock.Locker", libversion.ErrNoBuild, version)
		}
		return binPath, nil
	}
	store := t.TempDir()
	code, out, errOut := runCLI(t, "compare", "--backends", "rueidislock", "--families", "pause", "--seeds", "2", "--duration", "2s",
		"--store", store, "--library", module+"@v1.0.69,v1.0.71")
	if code != exitValid && code != exitInvalid {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	if !slices.Equal(built, []string{module + "@v1.0.69", module + "@v1.0.71"}) {
		t.Errorf("built %v", built)
	}
	if !strings.Contains(errOut, module+"@v1.0.71: does not build") || !strings.Contains(errOut, "its rows are left out") {
		t.Errorf("stderr does not say v1.0.71 did not build:\n%s", errOut)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(store, "matrix", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := matrix.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"rueidislock", "rueidislock@v1.0.69"}; !slices.Equal(m.Backends, want) {
		t.Errorf("rows %v, want %v", m.Backends, want)
	}
	if m.Shard != "" || len(m.Shards) > 0 {
		t.Errorf("shard %q shards %v: the shares are the comparison's own", m.Shard, m.Shards)
	}
	count := map[string]int{}
	for _, c := range m.Cells {
		count[c.Backend]++
		if c.Verdict == matrix.VerdictMissing {
			t.Errorf("%s: missing", c.CellKey)
		}
	}
	if count["rueidislock"] == 0 || count["rueidislock@v1.0.69"] != count["rueidislock"] || len(m.Cells) != len(m.Planned) {
		t.Errorf("cells by row %v, %d planned, %d cells", count, len(m.Planned), len(m.Cells))
	}
	// Each version cell as its version's own comparison (its shares under
	// parts/) judged it.
	own := map[matrix.CellKey]matrix.Cell{}
	shares, _ := filepath.Glob(filepath.Join(dir, "parts", "github.com!redis!rueidis@v1.0.69*", "matrix", "latest"))
	if len(shares) == 0 {
		t.Fatalf("no share of v1.0.69 under %s", filepath.Join(dir, "parts"))
	}
	for _, s := range shares {
		pm, err := matrix.Read(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range pm.Cells {
			own[c.CellKey] = c
		}
	}
	for _, c := range m.Cells {
		row, v, ok := strings.Cut(c.Backend, "@")
		if !ok {
			continue
		}
		k := c.CellKey
		k.Backend = row
		o, found := own[k]
		switch {
		case v != "v1.0.69":
			t.Errorf("%s: a row at %s", c.CellKey, v)
		case !found:
			t.Errorf("%s: not in v1.0.69's own comparison", c.CellKey)
		case o.Verdict != c.Verdict || o.AsExpected != c.AsExpected || o.KnownFinding != c.KnownFinding || !reflect.DeepEqual(o.Library, c.Library):
			t.Errorf("%s: %s as expected %v known %q; its own comparison: %s %v %q", c.CellKey, c.Verdict, c.AsExpected, c.KnownFinding, o.Verdict, o.AsExpected, o.KnownFinding)
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(c.Dir), "results.json")); err != nil {
			t.Errorf("%s: its run %s: %v", c.CellKey, c.Dir, err)
		}
	}
	if want := matrixExit(m); code != want {
		t.Errorf("exit %d, the joined comparison's %d", code, want)
	}
}
