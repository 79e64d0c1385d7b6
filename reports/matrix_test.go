package reports

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/matrix"
)

func TestNewCell(t *testing.T) {
	res := check(t, kleppmann(), "kleppmann-fenced", "redis-fenced")
	c := matrix.NewCell(matrix.CellKey{Scenario: "kleppmann-fenced", Backend: "redis-fenced", Seed: 1}, res, "invalid", map[string]string{"fencing": "valid"}, "../../x/y/z")
	if !c.AsExpected || c.Verdict != "invalid" || c.Checkers["fencing"] != "valid" {
		t.Errorf("cell: %+v", c)
	}
	if c.Holds != res.Checkers.Stats.Holds || c.Holds == 0 {
		t.Errorf("holds %d, want the stats checker's %d", c.Holds, res.Checkers.Stats.Holds)
	}
	// One overlap; the rejected stale write is the fence working, not a violation.
	if c.Violations != 1 {
		t.Errorf("violations %d, want 1 (the overlap)", c.Violations)
	}
	if h := Headline(res); !strings.HasPrefix(h, "INVALID — kleppmann-fenced") {
		t.Errorf("headline %q", h)
	}
	e := matrix.ErrorCell(matrix.CellKey{Scenario: "s", Backend: "b", Seed: 1}, "", nil, errors.New("redis-server would not start"))
	if e.AsExpected || e.Verdict != matrix.VerdictError || e.Expected != "valid" || !strings.Contains(e.Why, "would not start") {
		t.Errorf("error cell: %+v", e)
	}
}

// sampleMatrix is a matrix of every kind of cell: as expected, not as
// expected, a harness error, two seeds, a pair not applicable.
func sampleMatrix(runDir string) *matrix.Matrix {
	key := func(s, b string, seed int64) matrix.CellKey {
		return matrix.CellKey{Scenario: s, Backend: b, Seed: seed}
	}
	m := &matrix.Matrix{
		Started: "20260101T000000", Command: "locktorture matrix --seeds 2", Seeds: 2,
		Scenarios: []string{"baseline", "kleppmann-pause"},
		Backends:  []string{"mutex", "redis-token", "pg-advisory"},
		Skipped:   []matrix.Skipped{{Scenario: "kleppmann-pause", Backend: "pg-advisory", Why: "pause needs a lease"}},
	}
	m.Planned = []matrix.CellKey{key("baseline", "mutex", 1), key("baseline", "mutex", 2), key("baseline", "redis-token", 1), key("baseline", "redis-token", 2),
		key("baseline", "pg-advisory", 1), key("baseline", "pg-advisory", 2), key("kleppmann-pause", "redis-token", 1), key("kleppmann-pause", "redis-token", 2)}
	cell := func(k matrix.CellKey, verdict, expected string, holds, viol int) matrix.Cell {
		return matrix.Cell{CellKey: k, Verdict: verdict, Expected: expected, AsExpected: verdict == expected, Dir: runDir,
			Holds: holds, Violations: viol, Span: 2e9, HoldsPerSecond: float64(holds) / 2, Seconds: 3.5}
	}
	bad := cell(key("kleppmann-pause", "redis-token", 2), "valid", "invalid", 30, 0)
	bad.Why = "expected invalid, got valid"
	m.Cells = []matrix.Cell{
		cell(key("baseline", "mutex", 1), "invalid", "invalid", 100, 40),
		cell(key("baseline", "mutex", 2), "invalid", "invalid", 100, 35),
		cell(key("baseline", "redis-token", 1), "valid", "valid", 80, 0),
		cell(key("baseline", "redis-token", 2), "valid", "valid", 82, 0),
		matrix.ErrorCell(key("baseline", "pg-advisory", 1), "valid", nil, errors.New("postgres would not start: <exit 1> & \x01")),
		cell(key("baseline", "pg-advisory", 2), "valid", "valid", 50, 0),
		cell(key("kleppmann-pause", "redis-token", 1), "invalid", "invalid", 28, 14),
		bad,
	}
	return m
}

func TestWriteMatrix(t *testing.T) {
	root := t.TempDir()
	runDir := filepath.Join(root, "baseline", "mutex", "20260101T000000")
	res := check(t, kleppmann(), "baseline", "mutex")
	if err := WriteRun(context.Background(), runDir, kleppmann(), res, RunInfo{}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "matrix", "20260101T000000")
	m := sampleMatrix("../../baseline/mutex/20260101T000000")
	if err := WriteMatrix(context.Background(), dir, m); err != nil {
		t.Fatal(err)
	}
	if m.Valid {
		t.Error("a matrix with a differing cell and a harness error must not be valid")
	}
	if ok, differ, errs, missing := m.Counts(); ok != 6 || differ != 1 || errs != 1 || missing != 0 {
		t.Errorf("counts %d %d %d %d, want 6 1 1 0", ok, differ, errs, missing)
	}
	for _, name := range []string{FileResults, FileIndex, FileMatrixPNG, FileJUnit} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	checkPNG(t, filepath.Join(dir, FileMatrixPNG))

	idx := read(t, filepath.Join(dir, FileIndex))
	for _, w := range []string{`src="matrix.png"`, `href="../../baseline/mutex/20260101T000000/index.html"`, "HARNESS ERRORS",
		"valid ≠ invalid", "pause needs a lease", "n/a", `href="junit.xml"`, `href="results.json"`, "s1 invalid", "s2 invalid", m.Command} {
		if !strings.Contains(idx, w) {
			t.Errorf("matrix index.html lacks %q", w)
		}
	}
	if strings.Contains(idx, "http://") || strings.Contains(idx, "https://") || strings.Contains(idx, "<script") {
		t.Error("the matrix page must open from disk: no network, no scripts")
	}

	// junit.xml: valid XML, one testcase per cell, a failure for the cell
	// that differs, an error for the harness failure.
	type tcase struct {
		Name      string    `xml:"name,attr"`
		Classname string    `xml:"classname,attr"`
		Failure   *struct{} `xml:"failure"`
		Error     *struct{} `xml:"error"`
	}
	var doc struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Errors   int      `xml:"errors,attr"`
		Suites   []struct {
			Name  string  `xml:"name,attr"`
			Tests int     `xml:"tests,attr"`
			Cases []tcase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(read(t, filepath.Join(dir, FileJUnit))), &doc); err != nil {
		t.Fatalf("junit.xml is not XML: %v", err)
	}
	if doc.Tests != len(m.Cells) || doc.Failures != 1 || doc.Errors != 1 || len(doc.Suites) != 2 {
		t.Errorf("junit: tests=%d failures=%d errors=%d suites=%d; want %d 1 1 2", doc.Tests, doc.Failures, doc.Errors, len(doc.Suites), len(m.Cells))
	}
	n := 0
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			n++
			switch c.Name {
			case "redis-token seed 2":
				if s.Name == "locktorture/matrix/kleppmann-pause" && c.Failure == nil {
					t.Error("the differing cell should be a failure")
				}
			case "pg-advisory seed 1":
				if c.Error == nil {
					t.Error("the harness error should be an error")
				}
			default:
				if c.Failure != nil || c.Error != nil {
					t.Errorf("%s %s should pass", s.Name, c.Name)
				}
			}
		}
	}
	if n != len(m.Cells) {
		t.Errorf("%d testcases, want one per cell (%d)", n, len(m.Cells))
	}

	// Read back and written again: the same bytes, every file.
	before := readAll(t, dir)
	m2, err := matrix.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteMatrix(context.Background(), dir, m2); err != nil {
		t.Fatal(err)
	}
	if after := readAll(t, dir); !reflect.DeepEqual(before, after) {
		for name := range before {
			if !bytes.Equal(before[name], after[name]) {
				t.Errorf("%s changed when drawn again from results.json", name)
			}
		}
	}
	if _, err := matrix.Read(runDir); err == nil || matrix.IsDir(runDir) {
		t.Error("a run's results.json is not a matrix")
	}
}

// readAll reads every file of dir (not below it) by name.
func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		if e.Type().IsRegular() {
			out[e.Name()] = []byte(read(t, filepath.Join(dir, e.Name())))
		}
	}
	return out
}

// TestWriteRunDeterministic draws one run twice: every file is the same,
// byte for byte (nothing depends on the clock or on map order).
func TestWriteRunDeterministic(t *testing.T) {
	ops := kleppmann()
	res := check(t, ops, "kleppmann-fenced", "redis-fenced")
	info := kleppmannInfo()
	info.Summary = Summary(res, 3)
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := WriteRun(context.Background(), d, ops, res, info); err != nil {
			t.Fatal(err)
		}
	}
	fa, fb := readAll(t, a), readAll(t, b)
	if len(fa) < 7 {
		t.Fatalf("only %d files written", len(fa))
	}
	for name := range fa {
		if !bytes.Equal(fa[name], fb[name]) {
			t.Errorf("%s differs between two drawings of the same run", name)
		}
	}
	// run.json brings back the info the report was drawn with.
	got, err := ReadRunInfo(a)
	if err != nil {
		t.Fatal(err)
	}
	want := info
	want.Summary = ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("run.json gave %+v, want %+v", got, want)
	}
}

func shard(m *matrix.Matrix, i, n int) *matrix.Matrix {
	s := *m
	s.Shard = ""
	s.Cells = nil
	for j, c := range m.Cells {
		if j%n == i {
			s.Cells = append(s.Cells, c)
		}
	}
	s.Shard = fmt.Sprintf("%d/%d", i+1, n)
	return &s
}

func TestMergeMatrices(t *testing.T) {
	root := t.TempDir()
	whole := sampleMatrix("")
	whole.Finish()
	// Two shards on two "machines", each cell's run inside its shard's store.
	var dirs []string
	for i := range 2 {
		s := shard(whole, i, 2)
		for j := range s.Cells {
			s.Cells[j].Dir = "../../" + s.Cells[j].Backend + "/run"
		}
		d := filepath.Join(root, fmt.Sprintf("machine%d", i+1), "store", "matrix", fmt.Sprintf("2026010%dT000000", i+1))
		if err := WriteMatrix(context.Background(), d, s); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	out := filepath.Join(root, "merged", "matrix", "x")
	m, err := matrix.Merge(dirs, out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Grid(), whole.Grid()) {
		t.Errorf("merged grid differs from the whole matrix's:\n%v\n%v", m.Grid(), whole.Grid())
	}
	if m.Valid != whole.Valid || m.Shard != "" || len(m.Shards) != 2 {
		t.Errorf("merged: valid %v shard %q shards %v", m.Valid, m.Shard, m.Shards)
	}
	// Each cell's link now leads from the merged directory to the run in its shard.
	for _, c := range m.Cells {
		if c.Verdict == matrix.VerdictError {
			continue
		}
		want := "../../../machine"
		if !strings.HasPrefix(c.Dir, want) || !strings.HasSuffix(c.Dir, "/store/"+c.Backend+"/run") {
			t.Errorf("cell %s links to %q", c.CellKey, c.Dir)
		}
	}

	// One shard alone: the other's cells are missing, and the merge is not valid.
	m1, err := matrix.Merge(dirs[:1], out)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, missing := m1.Counts(); missing != len(whole.Cells)/2 || m1.Valid {
		t.Errorf("one shard of two: %d missing, valid %v", missing, m1.Valid)
	}
	// The same shard twice: a cell ran twice.
	if _, err := matrix.Merge([]string{dirs[0], dirs[0]}, out); err == nil || !strings.Contains(err.Error(), "ran in both") {
		t.Errorf("merging a shard twice: %v", err)
	}
	// A shard of another plan.
	other := sampleMatrix("")
	other.Planned = other.Planned[:3]
	od := filepath.Join(root, "other")
	if err := WriteMatrix(context.Background(), od, other); err != nil {
		t.Fatal(err)
	}
	if _, err := matrix.Merge([]string{dirs[0], od}, out); err == nil || !strings.Contains(err.Error(), "planned differently") {
		t.Errorf("merging shards of two plans: %v", err)
	}
}

func TestFinishValid(t *testing.T) {
	k := matrix.CellKey{Scenario: "baseline", Backend: "mutex", Seed: 1}
	m := &matrix.Matrix{Planned: []matrix.CellKey{k}, Cells: []matrix.Cell{{CellKey: k, Verdict: "invalid", Expected: "invalid", AsExpected: true}}}
	m.Finish()
	if !m.Valid || m.Kind != matrix.Kind {
		t.Errorf("every cell as expected: valid %v", m.Valid)
	}
	m.Interrupted = true
	m.Finish()
	if m.Valid {
		t.Error("an interrupted matrix is not valid")
	}
	empty := &matrix.Matrix{}
	empty.Finish()
	if empty.Valid {
		t.Error("a matrix that ran nothing is not valid")
	}
	if s := MatrixTable(m); !strings.Contains(s, "baseline") || !strings.Contains(s, "interrupted") {
		t.Errorf("table:\n%s", s)
	}
}

// TestBackendFiguresLikeWithLike: the per-backend figures come from the
// fault-free baseline cells only; a backend that ran none reads "not run",
// never 0, and violations under faults never enter them.
func TestBackendFiguresLikeWithLike(t *testing.T) {
	cell := func(scenario, backend string, holds, violations int) matrix.Cell {
		return matrix.Cell{CellKey: matrix.CellKey{Scenario: scenario, Backend: backend},
			Holds: holds, Violations: violations, Span: 2e9}
	}
	m := &matrix.Matrix{Cells: []matrix.Cell{
		cell("baseline", "etcd", 100, 0),
		cell("etcd-pause", "etcd", 50, 40),
		cell("baseline", "mutex", 200, 20),
		cell("pg-terminate", "pg-advisory", 30, 3),
	}}
	tests := []struct {
		backend      string
		perThousand  string
		cyclesPerSec string
	}{
		{"etcd", "0.0", "50.0"},
		{"mutex", "100.0", "100.0"},
		{"pg-advisory", notRun, notRun},
	}
	got := map[string]backendStat{}
	for _, s := range backendStats(m) {
		got[s.Backend] = s
	}
	for _, tc := range tests {
		s, ok := got[tc.backend]
		if !ok {
			t.Fatalf("no figures for %s", tc.backend)
		}
		if v := baselineFigure(s.PerThousand()); v != tc.perThousand {
			t.Errorf("%s: violations per 1,000 holds %s, want %s", tc.backend, v, tc.perThousand)
		}
		if v := baselineFigure(s.CyclesPerSecond()); v != tc.cyclesPerSec {
			t.Errorf("%s: cycles/s %s, want %s", tc.backend, v, tc.cyclesPerSec)
		}
	}
	if _, err := matrixPNG(m); err != nil {
		t.Fatal(err)
	}
}
