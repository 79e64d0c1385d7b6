package main

import (
	"bytes"
	"context"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/locktorture/locktorture/internal/libversion"
	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/runner"
)

// versionsLine is compare --library --plan's last line.
var versionsLine = regexp.MustCompile(`(?m)^with the versions: (\d+) cells, estimated (\S+) one at a time \((\S+) at --parallel (\d+)\)`)

// comparePlanned is the cells compare plans for args (no --library).
func comparePlanned(t *testing.T, args ...string) ([]matrix.Planned, runner.MatrixOptions) {
	t.Helper()
	var stderr bytes.Buffer
	opt, _, remove, code, ok := compareOptions(args, &stderr)
	if !ok {
		t.Fatalf("compare %v: exit %d: %s", args, code, stderr.String())
	}
	defer remove()
	shares, _, err := runner.PlanShards(opt)
	if err != nil {
		t.Fatal(err)
	}
	return shares[0], opt
}

// TestLibraryParts: each part's cells are compare's plan for its rows
// (the comparison as asked's, with its --exec rows; a version's, its
// library's rows alone), planned from compare's options, not from
// compare --plan's printed text; the estimate with the versions is
// matrix.Wall over every part's cells at the lanes, as compare --plan's.
func TestLibraryParts(t *testing.T) {
	base := []string{"--backends", "rueidislock,redislock", "--families", "pause,failover", "--seeds", "2", "--exec", "mine=/bin/true"}
	axes := []libraryAxis{
		{module: "github.com/redis/rueidis", versions: []string{"v1.0.69", "v1.0.71"}, rows: []string{"rueidislock"}},
		{module: "github.com/bsm/redislock", versions: []string{"v0.9.4"}, rows: []string{"redislock"}},
	}
	asked, _ := comparePlanned(t, base...)
	rueidis, _ := comparePlanned(t, "--backends", "rueidislock", "--families", "pause,failover", "--seeds", "2")
	redislock, _ := comparePlanned(t, "--backends", "redislock", "--families", "pause,failover", "--seeds", "2")
	wantCells := [][]matrix.Planned{asked, rueidis, rueidis, redislock}
	for _, tt := range []struct {
		extra    []string
		prestart bool
	}{{nil, true}, {[]string{"--prestart=false", "--parallel", "5", "--plan"}, false}} {
		var stderr bytes.Buffer
		parts, prestart, code := libraryParts(compareFlagArgs(append(slices.Clone(base), tt.extra...)), axes, &stderr)
		if parts == nil {
			t.Fatalf("%v: exit %d: %s", tt.extra, code, stderr.String())
		}
		if prestart != tt.prestart {
			t.Errorf("%v: prestart %v, want %v", tt.extra, prestart, tt.prestart)
		}
		if len(parts) != len(wantCells) {
			t.Fatalf("%v: %d parts, want %d", tt.extra, len(parts), len(wantCells))
		}
		var all []matrix.Planned
		for i, p := range parts {
			if !slices.EqualFunc(p.planned, wantCells[i], func(a, b matrix.Planned) bool { return a.Key == b.Key }) {
				t.Errorf("%v: part %s: cells %v, want compare's plan %v", tt.extra, p.name, p.planned, wantCells[i])
			}
			if p.cells != len(wantCells[i]) || p.est != matrix.Total(wantCells[i]) {
				t.Errorf("%v: part %s: %d cells, %v; want %d, %v", tt.extra, p.name, p.cells, p.est, len(wantCells[i]), matrix.Total(wantCells[i]))
			}
			all = append(all, wantCells[i]...)
		}
		for _, lanes := range []int{1, 3, 8} {
			n, total, wall := libraryEstimate(parts, lanes, prestart)
			if n != len(all) || total != matrix.Total(all) || wall != matrix.WallOnCores(all, lanes, runtime.NumCPU(), tt.prestart) {
				t.Errorf("%v: at %d lanes: %d cells, %v, %v; want %d, %v, %v (matrix.WallOnCores)", tt.extra, lanes, n, total, wall, len(all), matrix.Total(all), matrix.WallOnCores(all, lanes, runtime.NumCPU(), tt.prestart))
			}
		}
	}
}

// TestCompareLibraryPlanEstimate: compare --library --plan's estimate with
// the versions is the lanes model compare --plan uses (matrix.Wall) over
// every part's cells: the comparison as asked's, and its rows' again at
// each version. It failed before (26s at --parallel 3 where matrix.Wall
// gives 24s: the time one at a time over the lanes).
func TestCompareLibraryPlanEstimate(t *testing.T) {
	const module = "github.com/redis/rueidis"
	if _, err := libversion.List(context.Background(), module); err != nil {
		t.Skipf("the module proxy cannot be reached: %v", err)
	}
	base := []string{"--backends", "rueidislock", "--families", "pause,failover", "--seeds", "2"}
	for _, lanes := range []int{1, 3, 8} {
		t.Run(strconv.Itoa(lanes), func(t *testing.T) {
			args := append(slices.Clone(base), "--parallel", strconv.Itoa(lanes), "--plan")
			code, out, errOut := runCLI(t, append(append([]string{"compare"}, args...), "--library", module+"@v1.0.69,v1.0.71")...)
			if code != exitValid {
				t.Fatalf("exit %d: %s\n%s", code, out, errOut)
			}
			m := versionsLine.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no estimate with the versions in:\n%s", out)
			}
			one, opt := comparePlanned(t, args...)
			// The comparison as asked, and the same rows at two versions.
			cells := slices.Concat(one, one, one)
			want := []string{strconv.Itoa(len(cells)), roundEstimate(matrix.Total(cells)).String(), roundEstimate(matrix.WallOnCores(cells, lanes, runtime.NumCPU(), opt.Prestart)).String(), strconv.Itoa(lanes)}
			if !slices.Equal(m[1:], want) {
				t.Errorf("with the versions: %v (cells, one at a time, at --parallel, lanes); want %v (matrix.WallOnCores over every part's cells)\n%s", m[1:], want, out)
			}
		})
	}
}
