package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktorture/locktorture/matrix"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/scenarios"
)

// realBackends are the registered backends but this package's test-only ones.
func realBackends() []string {
	var out []string
	for _, b := range backends.Names() {
		if !strings.HasPrefix(b, "test-") {
			out = append(out, b)
		}
	}
	return out
}

func TestPlanMatrix(t *testing.T) {
	bs := realBackends()
	share, skipped, err := PlanMatrix(MatrixOptions{Backends: bs})
	if err != nil {
		t.Fatal(err)
	}
	// Every built-in scenario (but the families written for compare
	// alone) runs with exactly the backends it applies to (its backends:
	// list and suits:, or all), less the pairs it cannot take.
	got := map[string][]string{}
	for _, k := range share {
		got[k.Scenario] = append(got[k.Scenario], k.Backend)
		if k.Seed < 1 {
			t.Errorf("cell %s has no seed", k)
		}
	}
	skip := map[[2]string]bool{}
	for _, s := range skipped {
		skip[[2]string{s.Scenario, s.Backend}] = true
		if s.Why == "" {
			t.Errorf("skipped %s × %s without a reason", s.Scenario, s.Backend)
		}
	}
	for _, name := range scenarios.MatrixDefault() {
		sc, err := scenarios.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, b := range bs {
			if sc.Applies(b) && !skip[[2]string{name, b}] {
				want = append(want, b)
			}
		}
		if !slices.Equal(got[name], want) {
			t.Errorf("%s: planned backends %v, want %v", name, got[name], want)
		}
	}
	if len(got["baseline"]) < 2 || !slices.Contains(got["baseline"], "mutex") {
		t.Errorf("baseline should run with every backend, the mutex included: %v", got["baseline"])
	}

	// Seeds multiply the cells; shards deal them out, each exactly once.
	opt := MatrixOptions{Scenarios: []string{"baseline"}, Backends: []string{"mutex", "redis-token", "redis-naive"}, Seeds: 3}
	all, _, err := PlanMatrix(opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 9 || all[0].Seed != 1 || all[2].Seed != 3 {
		t.Fatalf("3 backends × 3 seeds: %v", all)
	}
	var union []matrix.CellKey
	for i := 1; i <= 4; i++ {
		o := opt
		o.Shard, o.Shards = i, 4
		part, _, err := PlanMatrix(o)
		if err != nil {
			t.Fatal(err)
		}
		if len(part) < 2 || len(part) > 3 {
			t.Errorf("shard %d/4 of 9 cells has %d", i, len(part))
		}
		union = append(union, part...)
	}
	slices.SortFunc(union, func(a, b matrix.CellKey) int { return strings.Compare(a.String(), b.String()) })
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b matrix.CellKey) int { return strings.Compare(a.String(), b.String()) })
	if !slices.Equal(union, sorted) {
		t.Errorf("the shards' cells are not the plan's, once each:\n%v\n%v", union, sorted)
	}

	// A fault that cannot act on a backend makes the pair not applicable.
	file := filepath.Join(t.TempDir(), "clocky.yaml")
	os.WriteFile(file, []byte("name: clocky\nbackend: redis-token\nnemesis:\n  random: {faults: [clock], interval: 1s, min: 100ms, max: 200ms}\n"), 0o644)
	share, skipped, err = PlanMatrix(MatrixOptions{Scenarios: []string{file}, Backends: []string{"mutex", "redis-token"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(share) != 1 || share[0].Backend != "redis-token" || len(skipped) != 1 || skipped[0].Backend != "mutex" || !strings.Contains(skipped[0].Why, "clock") {
		t.Errorf("clock on the lease-less mutex should be skipped: %v %v", share, skipped)
	}

	for _, bad := range []MatrixOptions{
		{Backends: []string{"no-such-lock"}},
		{Scenarios: []string{"no-such-scenario"}},
		{Scenarios: []string{"kleppmann-pause"}, Backends: []string{"mutex"}}, // no cell at all
		{Scenarios: []string{"baseline", "baseline"}},
	} {
		if _, _, err := PlanMatrix(bad); !errors.Is(err, ErrBadInput) {
			t.Errorf("%+v: want ErrBadInput, got %v", bad, err)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		i, n int
		ok   bool
	}{{"1/2", 1, 2, true}, {"2/2", 2, 2, true}, {" 3 / 5 ", 3, 5, true}, {"0/2", 0, 0, false}, {"3/2", 0, 0, false}, {"1", 0, 0, false}, {"a/b", 0, 0, false}, {"1/0", 0, 0, false}} {
		i, n, err := ParseShard(tc.in)
		if (err == nil) != tc.ok || i != tc.i || n != tc.n {
			t.Errorf("ParseShard(%q) = %d, %d, %v", tc.in, i, n, err)
		}
	}
}

// snapshot reads every regular file under dir, by relative path.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFiles(t *testing.T, what string, before, after map[string][]byte) {
	t.Helper()
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			t.Errorf("%s: %s is gone", what, name)
		case !bytes.Equal(a, b):
			t.Errorf("%s: %s differs (%d bytes, then %d)", what, name, len(b), len(a))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s: %s appeared", what, name)
		}
	}
}

// TestMatrixShardsAndReport runs baseline with the in-process mutex and two
// Redis locks: once whole, once as two shards on two "machines" (stores)
// merged. The verdict grid is the same; every cell is as expected; report
// redraws the stored matrix and its runs byte for byte.
func TestMatrixShardsAndReport(t *testing.T) {
	requireRedis(t)
	tmp := t.TempDir()
	dur := time.Second
	opt := MatrixOptions{
		Scenarios: []string{"baseline"}, Backends: []string{"mutex", "redis-token", "redis-naive"},
		Overrides: scenarios.Overrides{Duration: &dur}, RunArgs: []string{"--duration", "1s"}, TempDir: tmp,
		Command: "test matrix",
	}
	var events []CellEvent
	whole := opt
	whole.Store = t.TempDir()
	whole.OnCell = func(ev CellEvent) { events = append(events, ev) }
	out, err := RunMatrix(context.Background(), whole)
	if err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, tmp)
	m := out.Matrix
	if len(m.Cells) != 3 || !m.Valid {
		t.Fatalf("want 3 cells, all as expected:\n%s", reports.MatrixTable(m))
	}
	if len(events) != 6 || events[0].Done || !events[1].Done || events[5].Cell.Backend != "redis-naive" {
		t.Errorf("OnCell events: %+v", events)
	}
	for _, c := range m.Cells {
		want := "valid"
		if c.Backend == "mutex" {
			want = "invalid" // the negative control is caught
		}
		if c.Verdict != want || c.Holds == 0 || c.Seconds <= 0 {
			t.Errorf("cell %s: %+v", c.CellKey, c)
		}
		if _, err := os.Stat(filepath.Join(out.Dir, c.Dir, reports.FileIndex)); err != nil {
			t.Errorf("cell %s links to a missing run: %v", c.CellKey, err)
		}
		if !strings.Contains(readString(t, filepath.Join(out.Dir, c.Dir, reports.FileIndex)), "locktorture run --scenario baseline --backend "+c.Backend+" --seed 1 --duration 1s") {
			t.Errorf("cell %s: its run page lacks the repeat command", c.CellKey)
		}
	}
	if target, err := os.Readlink(filepath.Join(whole.Store, "matrix", "latest")); err != nil || target != filepath.Base(out.Dir) {
		t.Errorf("store/matrix/latest -> %q (%v)", target, err)
	}

	// report redraws every file of the matrix and of its runs identically.
	before := snapshot(t, whole.Store)
	for _, f := range []string{reports.FileIndex, reports.FileMatrixPNG, reports.FileJUnit} {
		os.Remove(filepath.Join(out.Dir, f))
	}
	runDir := filepath.Join(out.Dir, m.Cells[1].Dir)
	for _, f := range []string{reports.FileIndex, reports.FileTimeline, reports.FileLatency, reports.FileRate, reports.FileLinearizability, reports.FileJUnit} {
		os.Remove(filepath.Join(runDir, f))
	}
	dir, isMatrix, err := Report(context.Background(), out.Dir, func(s string) { t.Error(s) })
	if err != nil || !isMatrix || dir != out.Dir {
		t.Fatalf("report: %v %v %v", dir, isMatrix, err)
	}
	sameFiles(t, "matrix report redrawn", before, snapshot(t, whole.Store))

	// The same matrix as two shards on two machines, merged.
	var shardDirs []string
	for i := 1; i <= 2; i++ {
		s := opt
		s.Store = t.TempDir()
		s.Shard, s.Shards = i, 2
		so, err := RunMatrix(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if so.Matrix.Shard == "" || len(so.Matrix.Planned) != 3 {
			t.Errorf("shard %d: %q, planned %d", i, so.Matrix.Shard, len(so.Matrix.Planned))
		}
		shardDirs = append(shardDirs, s.Store) // a store: its newest matrix is taken
	}
	assertNothingLeft(t, tmp)
	mstore := t.TempDir()
	merged, err := MergeMatrix(context.Background(), shardDirs, mstore, "test merge")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(merged.Matrix.Grid(), m.Grid()) {
		t.Errorf("merged grid differs from the whole run's:\n%v\n%v", merged.Matrix.Grid(), m.Grid())
	}
	if !merged.Matrix.Valid || len(merged.Matrix.Shards) != 2 {
		t.Errorf("merged: valid %v, shards %v", merged.Matrix.Valid, merged.Matrix.Shards)
	}
	for _, c := range merged.Matrix.Cells {
		if _, err := os.Stat(filepath.Join(merged.Dir, c.Dir, reports.FileIndex)); err != nil {
			t.Errorf("merged cell %s links to a missing run: %v", c.CellKey, err)
		}
	}
	// Merging one shard alone leaves the other's cells missing: not valid.
	half, err := MergeMatrix(context.Background(), shardDirs[:1], t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, missing := half.Matrix.Counts(); missing == 0 || half.Matrix.Valid {
		t.Errorf("half a matrix merged should have missing cells:\n%s", reports.MatrixTable(half.Matrix))
	}
	if _, err := MergeMatrix(context.Background(), []string{t.TempDir()}, t.TempDir(), ""); !errors.Is(err, ErrBadInput) {
		t.Errorf("merging a directory with no matrix: %v", err)
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMatrixHarnessError: a backend that fails to start is an error cell,
// and the matrix goes on to the next cell.
func TestMatrixHarnessError(t *testing.T) {
	requireRedis(t)
	tmp := t.TempDir()
	dur := time.Second
	out, err := RunMatrix(context.Background(), MatrixOptions{
		Scenarios: []string{"baseline"}, Backends: []string{"test-fail-after-start", "mutex"},
		Overrides: scenarios.Overrides{Duration: &dur}, Store: t.TempDir(), TempDir: tmp,
	})
	if err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, tmp)
	m := out.Matrix
	if len(m.Cells) != 2 || !m.HasErrors() || m.Valid {
		t.Fatalf("want an error cell and a run after it:\n%s", reports.MatrixTable(m))
	}
	if c := m.Cells[0]; c.Verdict != matrix.VerdictError || !strings.Contains(c.Error, "refused to start") || c.Dir != "" {
		t.Errorf("error cell: %+v", c)
	}
	if c := m.Cells[1]; c.Backend != "mutex" || c.Verdict != "invalid" || !c.AsExpected {
		t.Errorf("the cell after the error: %+v", c)
	}
	if !strings.Contains(readString(t, filepath.Join(out.Dir, reports.FileJUnit)), `type="harness"`) {
		t.Error("junit.xml should carry the harness error")
	}
}

// TestMatrixInterrupted: a cancelled matrix stops, keeps what ran, and
// says so.
func TestMatrixInterrupted(t *testing.T) {
	tmp := t.TempDir()
	dur := 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := RunMatrix(ctx, MatrixOptions{
		Scenarios: []string{"baseline"}, Backends: []string{"mutex"}, Seeds: 3,
		Overrides: scenarios.Overrides{Duration: &dur}, Store: t.TempDir(), TempDir: tmp,
		OnCell: func(ev CellEvent) {
			if ev.Done {
				cancel()
			}
		},
	})
	if !errors.Is(err, ErrInterrupted) || out == nil {
		t.Fatalf("want ErrInterrupted and an outcome, got %v", err)
	}
	m, rerr := matrix.Read(out.Dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !m.Interrupted || m.Valid || len(m.Cells) != 1 || len(m.Planned) != 3 {
		t.Errorf("interrupted matrix: %+v", m)
	}
	assertNothingLeft(t, tmp)
}

// TestAnalyzeRedrawsReport: analyze writes the report files again, the
// same as the run wrote them.
func TestAnalyzeRedrawsReport(t *testing.T) {
	dur := 500 * time.Millisecond
	sc := builtin(t, "baseline", scenarios.Overrides{Backend: ptr("mutex"), Duration: &dur})
	out, _ := runIt(t, sc)
	before := snapshot(t, out.Dir)
	for _, f := range []string{reports.FileIndex, reports.FileTimeline, reports.FileJUnit, reports.FileLinearizability} {
		if err := os.Remove(filepath.Join(out.Dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Analyze(context.Background(), out.Dir, Options{}, func(s string) { t.Error(s) }); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "analyze", before, snapshot(t, out.Dir))
}

// TestMatrixFollowsOneCellAtATime: Observe sees the ops of one cell at a
// time, the one OnCell marks followed, from its start to its end; one by
// one every cell is followed, side by side one of the running cells is.
func TestMatrixFollowsOneCellAtATime(t *testing.T) {
	d := 300 * time.Millisecond
	for _, parallel := range []int{1, 3} {
		t.Run(fmt.Sprint("parallel ", parallel), func(t *testing.T) {
			var observed atomic.Int64
			var (
				mu                  sync.Mutex
				following, followed int
				followedOps         int64
				startFollowed       = map[int]bool{}
			)
			out, err := RunMatrix(context.Background(), MatrixOptions{
				Scenarios: []string{"baseline"}, Backends: []string{"mutex"}, Seeds: 4,
				Store: t.TempDir(), TempDir: t.TempDir(), Parallel: parallel,
				Overrides: scenarios.Overrides{Duration: &d},
				Observe:   func(history.Op) { observed.Add(1) },
				OnCell: func(ev CellEvent) {
					mu.Lock()
					defer mu.Unlock()
					if !ev.Done {
						startFollowed[ev.Index] = ev.Followed
						if ev.Followed {
							following++
							followed++
						}
						if following > 1 {
							t.Errorf("cell %d: %d cells followed at once", ev.Index, following)
						}
						return
					}
					if ev.Followed != startFollowed[ev.Index] {
						t.Errorf("cell %d: followed %v at its start, %v at its end", ev.Index, startFollowed[ev.Index], ev.Followed)
					}
					if ev.Followed {
						following--
						followedOps += int64(ev.Cell.Ops)
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Matrix.Cells) != 4 {
				t.Fatalf("%d cells, want 4", len(out.Matrix.Cells))
			}
			if followed == 0 || (parallel == 1 && followed != 4) {
				t.Errorf("%d of 4 cells followed", followed)
			}
			if got := observed.Load(); got != followedOps || got == 0 {
				t.Errorf("Observe saw %d ops; the followed cells recorded %d", got, followedOps)
			}
		})
	}
}

// TestMatrixInterruptedLeavesLatest: store/matrix/latest moves only when a
// matrix completes, as store/latest does for a run: an interrupted matrix
// (0 of 2 cells, or some) leaves it on the last complete one, and merge
// given the store takes that one too, not the half run.
func TestMatrixInterruptedLeavesLatest(t *testing.T) {
	store := t.TempDir()
	dur := 300 * time.Millisecond
	opt := MatrixOptions{Scenarios: []string{"baseline"}, Backends: []string{"mutex"},
		Overrides: scenarios.Overrides{Duration: &dur}, Store: store, TempDir: t.TempDir()}
	whole, err := RunMatrix(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	latest := filepath.Join(store, "matrix", "latest")
	pointsAt := func() string {
		t.Helper()
		d, err := filepath.EvalSymlinks(latest)
		if err != nil {
			t.Fatalf("store/matrix/latest: %v", err)
		}
		return d
	}
	want, _ := filepath.EvalSymlinks(whole.Dir)
	if got := pointsAt(); got != want {
		t.Fatalf("after a complete matrix latest is %s, want %s", got, want)
	}
	for _, cells := range []int{0, 1} {
		ctx, cancel := context.WithCancel(context.Background())
		o := opt
		o.Seeds = 2
		o.OnCell = func(ev CellEvent) {
			if cells == 0 || ev.Done {
				cancel()
			}
		}
		half, err := RunMatrix(ctx, o)
		cancel()
		if !errors.Is(err, ErrInterrupted) || half == nil {
			t.Fatalf("want ErrInterrupted and an outcome, got %v", err)
		}
		if len(half.Matrix.Cells) != cells {
			t.Fatalf("interrupted after %d cells, want %d", len(half.Matrix.Cells), cells)
		}
		if got := pointsAt(); got != want {
			t.Errorf("an interrupted matrix (%d of 2 cells) moved store/matrix/latest to %s; want it left on %s", cells, got, want)
		}
		if d, err := resolveMatrixDir(store); err != nil || d != whole.Dir {
			t.Errorf("merge of the store takes %s (%v), want the complete %s", d, err, whole.Dir)
		}
	}
}
