package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/reports"
)

// planShards runs `ARGS --plan --shard i/n` for every i and returns each
// shard's cells and the estimate each plan prints for every shard (they
// must agree).
func planShards(t *testing.T, n int, args ...string) (cells [][]string, ests []time.Duration) {
	t.Helper()
	line := regexp.MustCompile(`^shard (\d+)/(\d+): (\d+) cells?, estimated (\S+)`)
	for i := 1; i <= n; i++ {
		code, out, stderr := runCLI(t, append(slices.Clone(args), "--plan", "--shard", strconv.Itoa(i)+"/"+strconv.Itoa(n))...)
		if code != exitValid {
			t.Fatalf("shard %d/%d: exit %d\n%s\n%s", i, n, code, out, stderr)
		}
		var mine []string
		var got []time.Duration
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			m := line.FindStringSubmatch(l)
			switch {
			case m != nil:
				d, err := time.ParseDuration(m[4])
				if err != nil {
					t.Fatalf("%q: %v", l, err)
				}
				got = append(got, d)
				if m[1] == strconv.Itoa(i) && !strings.Contains(l, "this shard") {
					t.Errorf("shard %d/%d's own line does not say so: %q", i, n, l)
				}
				if k, _ := strconv.Atoi(m[3]); m[1] == strconv.Itoa(i) && k != len(mine) {
					t.Errorf("shard %d/%d: %d cells listed, its line says %d", i, n, len(mine), k)
				}
			case strings.HasPrefix(l, "not applicable: "), strings.HasPrefix(l, "shards differ"):
			default:
				mine = append(mine, l)
			}
		}
		if len(got) != n {
			t.Fatalf("shard %d/%d: %d shard estimates, want %d:\n%s", i, n, len(got), n, out)
		}
		if ests == nil {
			ests = got
		} else if !slices.Equal(ests, got) {
			t.Errorf("shard %d/%d gives other estimates %v than shard 1's %v", i, n, got, ests)
		}
		cells = append(cells, mine)
	}
	return cells, ests
}

// TestComparePlanShards: the full comparison's plan in three shards: every
// cell in exactly one shard, the shards' estimates within 15% of each
// other, and each shard's --plan listing its cells and every shard's
// estimate. Nothing runs.
func TestComparePlanShards(t *testing.T) {
	code, whole, stderr := runCLI(t, "compare", "--plan")
	if code != exitValid {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var all []string
	for _, l := range strings.Split(strings.TrimSpace(whole), "\n") {
		if strings.Contains(l, " / ") && !strings.HasPrefix(l, "not applicable: ") {
			all = append(all, l)
		}
	}
	if !regexp.MustCompile(`(?m)^\d+ cells, estimated \S+ one at a time`).MatchString(whole) {
		t.Errorf("the whole plan gives no estimate:\n%s", tail(whole))
	}
	cells, ests := planShards(t, 3, "compare")
	var union []string
	for _, c := range cells {
		union = append(union, c...)
	}
	slices.Sort(union)
	slices.Sort(all)
	if !slices.Equal(union, all) {
		t.Errorf("the three shards hold %d cells, the plan %d (each must be in exactly one)", len(union), len(all))
	}
	lo, hi := slices.Min(ests), slices.Max(ests)
	t.Logf("compare, 3 shards: %v (%d cells); spread %.1f%%", ests, len(all), 100*float64(hi-lo)/float64(hi))
	if float64(hi-lo) > 0.15*float64(hi) {
		t.Errorf("the shards' estimates %v differ by more than 15%%", ests)
	}
}

// tail is the last lines of s.
func tail(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(ls[max(0, len(ls)-5):], "\n")
}

// TestVersionsPlanShards: the version matrix (make versions: its scenarios
// over versions.debian.yaml) in three shards: every cell in exactly one,
// the shards' estimates within 15% of each other. Nothing runs.
func TestVersionsPlanShards(t *testing.T) {
	args := []string{"matrix", "--servers", "docker", "--versions", "../../versions.debian.yaml",
		"--scenarios", "baseline,kleppmann-pause,pg-terminate,etcd-pause,zk-pause,failover"}
	code, whole, stderr := runCLI(t, append(slices.Clone(args), "--plan")...)
	if code != exitValid {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var all []string
	for _, l := range strings.Split(strings.TrimSpace(whole), "\n") {
		if strings.Contains(l, " / ") && !strings.HasPrefix(l, "not applicable: ") {
			all = append(all, l)
		}
	}
	cells, ests := planShards(t, 3, args...)
	var union []string
	for _, c := range cells {
		union = append(union, c...)
	}
	slices.Sort(union)
	slices.Sort(all)
	if len(all) == 0 || !slices.Equal(union, all) {
		t.Errorf("the three shards hold %d cells, the plan %d (each must be in exactly one)", len(union), len(all))
	}
	if !strings.Contains(strings.Join(all, "\n"), " @ trixie (seed") {
		t.Errorf("no version set's cell in the plan:\n%s", tail(whole))
	}
	lo, hi := slices.Min(ests), slices.Max(ests)
	t.Logf("versions, 3 shards: %v (%d cells); spread %.1f%%", ests, len(all), 100*float64(hi-lo)/float64(hi))
	if float64(hi-lo) > 0.15*float64(hi) {
		t.Errorf("the shards' estimates %v differ by more than 15%%", ests)
	}
}

// maskRuns blanks what differs between two runs of the same cells and
// where they were stored: durations (speeds, latencies, recoveries), the
// counts of a cell's violations (how many stale holders a pause makes
// varies from run to run; that it makes them does not), paths, and the
// padding of columns.
func maskRuns(s string) string {
	s = regexp.MustCompile(`\d+(\.\d+)?(ns|µs|us|ms|s|m|h|/s)\b|/\S+`).ReplaceAllString(s, "T")
	s = regexp.MustCompile(`\b(sh|dg|lu|sw|rej)\d+ ?`).ReplaceAllString(s, "")
	return regexp.MustCompile(`[ \t]+`).ReplaceAllString(s, " ")
}

// TestCompareShardsMerge: a small comparison run whole and in three shards
// (three stores, as three machines), merged: the same compare.txt (timings
// and paths masked), the same cells with the same verdicts, and the same
// files a whole run writes. Merged without one shard, its cells are
// missing (red in the table) and the merge exits 1.
func TestCompareShardsMerge(t *testing.T) {
	requireRedis(t)
	args := []string{"compare", "--families", "pause", "--backends", "redis-token,redis-naive", "--seeds", "1", "--quiet"}
	whole := t.TempDir()
	if code, out, stderr := runCLI(t, append(slices.Clone(args), "--store", whole)...); code != exitValid {
		t.Fatalf("whole comparison: exit %d\n%s\n%s", code, out, stderr)
	}
	var shards []string
	for i := 1; i <= 3; i++ {
		st := t.TempDir()
		code, out, stderr := runCLI(t, append(slices.Clone(args), "--store", st, "--shard", strconv.Itoa(i)+"/3")...)
		if code != exitValid {
			t.Fatalf("shard %d/3: exit %d\n%s\n%s", i, code, out, stderr)
		}
		shards = append(shards, st) // a store: merge takes its newest matrix
	}
	merged := t.TempDir()
	code, out, stderr := runCLI(t, append([]string{"merge", "--store", merged}, shards...)...)
	if code != exitValid {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, stderr)
	}
	wdir, mdir := filepath.Join(whole, "matrix", "latest"), filepath.Join(merged, "matrix", "latest")
	for _, f := range []string{reports.FileCompareHTML, reports.FileComparePNG, "compare.txt", reports.FileResults, reports.FileJUnit, reports.FileIndex} {
		if st, err := os.Stat(filepath.Join(mdir, f)); err != nil || st.Size() == 0 {
			t.Errorf("the merge wrote no %s: %v", f, err)
		}
	}
	wt, mt := readText(t, filepath.Join(wdir, "compare.txt")), readText(t, filepath.Join(mdir, "compare.txt"))
	if maskRuns(wt) != maskRuns(mt) {
		t.Errorf("the merged compare.txt differs from the whole run's:\n%s\nwhole:\n%s", mt, wt)
	}
	if !strings.Contains(out, "PAUSE") || !strings.Contains(out, "redis-naive") {
		t.Errorf("merge printed no comparison table:\n%s", out)
	}
	a, err := matrix.Read(wdir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := matrix.Read(mdir)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Cells) != 4 || !reflect.DeepEqual(a.Grid(), b.Grid()) || !b.Compare {
		t.Errorf("merged cells differ from the whole run's:\n%v\n%v (compare %v)", b.Grid(), a.Grid(), b.Compare)
	}
	if d := parseJUnit(t, filepath.Join(mdir, reports.FileJUnit)); d.Tests != 4 || d.Failures != 0 {
		t.Errorf("merged junit: %+v", d)
	}

	// Cell for cell: the whole run's own cells, dealt into three shards as
	// the real shards were, merge to the whole run's matrix (but for where
	// the runs are and when and how it was made) and its compare.txt, byte
	// for byte.
	var own []string
	for i, sd := range shards {
		sm, err := matrix.Read(filepath.Join(sd, "matrix", "latest"))
		if err != nil {
			t.Fatal(err)
		}
		fake := *a
		fake.Shard, fake.Cells = sm.Shard, nil
		for _, c := range a.Cells {
			if slices.ContainsFunc(sm.Cells, func(x matrix.Cell) bool { return x.CellKey == c.CellKey }) {
				c.Dir = filepath.ToSlash(filepath.Join("..", "..", filepath.Base(filepath.Dir(filepath.Dir(wdir))), "matrix", a.Started, c.Dir))
				fake.Cells = append(fake.Cells, c)
			}
		}
		d := filepath.Join(t.TempDir(), "matrix", "shard"+strconv.Itoa(i+1))
		if err := reports.WriteMatrix(t.Context(), d, &fake); err != nil {
			t.Fatal(err)
		}
		own = append(own, d)
	}
	again := t.TempDir()
	if code, out, stderr := runCLI(t, append([]string{"merge", "--store", again}, own...)...); code != exitValid {
		t.Fatalf("merging the whole run's cells in three shards: exit %d\n%s\n%s", code, out, stderr)
	}
	adir := filepath.Join(again, "matrix", "latest")
	c, err := matrix.Read(adir)
	if err != nil {
		t.Fatal(err)
	}
	norm := func(m *matrix.Matrix) matrix.Matrix {
		n := *m
		n.Started, n.Command, n.Shard, n.Shards, n.Seconds = "", "", "", nil, 0
		n.Cells = slices.Clone(m.Cells)
		for i := range n.Cells {
			n.Cells[i].Dir = ""
		}
		return n
	}
	if na, nc := norm(a), norm(c); !reflect.DeepEqual(na, nc) {
		t.Errorf("the whole run's cells merged from three shards are not its matrix:\n%+v\n%+v", nc, na)
	}
	if ct := readText(t, filepath.Join(adir, "compare.txt")); ct != wt {
		t.Errorf("the whole run's cells merged from three shards: compare.txt\n%s\nwant\n%s", ct, wt)
	}

	// Shard 2 never came: its cells are missing, red, and the merge fails;
	// so when its store came empty (its job failed before its matrix began).
	code, out, _ = runCLI(t, "merge", "--store", t.TempDir(), shards[0], shards[2])
	if code != exitInvalid || !strings.Contains(out, "MISSING") || !strings.Contains(out, "shard 2/3") {
		t.Errorf("merging shards 1 and 3 of 3: exit %d, want %d\n%s", code, exitInvalid, out)
	}
	empty := t.TempDir()
	code, out, stderr = runCLI(t, "merge", "--store", t.TempDir(), shards[0], empty, shards[2])
	if code != exitInvalid || !strings.Contains(out, "MISSING") || !strings.Contains(stderr, empty+" holds no matrix") {
		t.Errorf("merging shards 1 and 3 of 3 and an empty store: exit %d, want %d\n%s\n%s", code, exitInvalid, out, stderr)
	}
	if code, _, _ := runCLI(t, "merge", "--store", t.TempDir(), empty); code != exitBadArgs {
		t.Errorf("merging an empty store alone: exit %d, want %d", code, exitBadArgs)
	}
}

func readText(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParallelAuto: --parallel auto runs from two to four cells at once
// for each core the machine has, as many as the planned cells' CPU leaves
// room for — light cells (in-process clients over Redis) more than heavy
// ones (a ZooKeeper JVM and two Curator JVMs, or two Pythons, each) — and says how many,
// for matrix and compare; the plan's estimate is for that many. A word
// other than auto, or a number out of range, is bad input.
func TestParallelAuto(t *testing.T) {
	cores := runtime.NumCPU()
	lo, hi := min(cellsPerCore*cores, maxParallel), min(maxCellsPerCore*cores, maxParallel)
	lanes := map[string]int{}
	for _, args := range [][]string{
		{"matrix", "--scenarios", "baseline", "--backends", "mutex,redis-token"},
		{"compare", "--families", "pause", "--backends", "redis-token", "--seeds", "1"},
		{"compare", "--families", "pause,delay,partition", "--backends", "redis-token,redislock,rueidislock", "--seeds", "3"},
		{"compare", "--families", "pause,delay,partition", "--backends", "curator,kazoo", "--seeds", "3"},
		// Servers in containers: the CPU model is of local servers.
		{"compare", "--families", "pause,delay,partition", "--backends", "redis-token,redislock", "--seeds", "3", "--servers", "docker", "--image", "all=locktorture-servers:bookworm"},
	} {
		name := strings.Join(args, " ")
		code, out, stderr := runCLI(t, append(slices.Clone(args), "--parallel", "auto", "--plan")...)
		if code != exitValid {
			t.Fatalf("%s: exit %d\n%s", name, code, stderr)
		}
		m := regexp.MustCompile(`--parallel auto: (\d+) (core|cores) found, (\d+) at once`).FindStringSubmatch(stderr)
		if m == nil || m[1] != strconv.Itoa(cores) {
			t.Fatalf("%s: stderr does not say the cores found and the cells at once:\n%s", name, stderr)
		}
		n, _ := strconv.Atoi(m[3])
		if n < lo || n > hi {
			t.Errorf("%s: %d at once, outside %d to %d", name, n, lo, hi)
		}
		if want := fmt.Sprintf("at --parallel %d)", n); !strings.Contains(out, want) {
			t.Errorf("%s: the plan's estimate is not for %d at once:\n%s", name, n, out)
		}
		lanes[args[4]] = n
	}
	if light, heavy := lanes["redis-token,redislock,rueidislock"], lanes["curator,kazoo"]; light <= heavy {
		t.Errorf("light cells %d at once, heavy %d: want more for the light", light, heavy)
	}
	if n := lanes["redis-token,redislock"]; n != lo {
		t.Errorf("light cells in containers %d at once, want two a core (%d): the CPU model is of local servers", n, lo)
	}
	for _, bad := range []string{"most", "0", "65"} {
		if code, _, stderr := runCLI(t, "matrix", "--scenarios", "baseline", "--parallel", bad, "--plan"); code != exitBadArgs || !strings.Contains(stderr, "parallel") {
			t.Errorf("--parallel %s: exit %d, %q", bad, code, stderr)
		}
	}
}
