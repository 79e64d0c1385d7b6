package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/internal/testenv"
	"github.com/locktorture/locktorture/matrix"

	"github.com/locktorture/locktorture/reports"
)

func TestMatrixBadInputExits254(t *testing.T) {
	store := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown backend", []string{"matrix", "--backends", "no-such-lock", "--store", store}, `unknown backend "no-such-lock"`},
		{"unknown scenario", []string{"matrix", "--scenarios", "nope", "--store", store}, `unknown scenario "nope"`},
		{"bad shard", []string{"matrix", "--shard", "3/2", "--store", store}, "--shard"},
		{"bad seeds", []string{"matrix", "--seeds", "0", "--store", store}, "--seeds"},
		{"no parallel", []string{"matrix", "--parallel", "0", "--store", store}, "--parallel must be from 1 to 64, not 0"},
		{"too parallel", []string{"matrix", "--parallel", "65", "--store", store}, "--parallel must be from 1 to 64, not 65"},
		{"no cell", []string{"matrix", "--scenarios", "kleppmann-pause", "--backends", "mutex", "--store", store}, "no scenario applies"},
		{"extra argument", []string{"matrix", "baseline"}, "unexpected argument"},
		{"merge nothing", []string{"merge", "--store", store, t.TempDir()}, "neither a matrix"},
		{"report nothing", []string{"report", t.TempDir()}, "neither a run"},
		{"report missing", []string{"report", "/nonexistent/run"}, "nonexistent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != exitBadArgs {
				t.Errorf("exit %d, want 254 (stderr %q)", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not say %q", stderr, tc.want)
			}
		})
	}
	if ents, _ := os.ReadDir(store); len(ents) != 0 {
		t.Errorf("bad input wrote to the store: %v", ents)
	}
}

// junitDoc is what CI tools read of a junit.xml.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Tests int    `xml:"tests,attr"`
		Cases []struct {
			Name      string    `xml:"name,attr"`
			Classname string    `xml:"classname,attr"`
			Time      string    `xml:"time,attr"`
			Failure   *struct{} `xml:"failure"`
			Error     *struct{} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func parseJUnit(t *testing.T, path string) junitDoc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d junitDoc
	if err := xml.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s is not valid JUnit XML: %v", path, err)
	}
	n := 0
	for _, s := range d.Suites {
		if s.Tests != len(s.Cases) {
			t.Errorf("suite %s says %d tests but has %d", s.Name, s.Tests, len(s.Cases))
		}
		for _, c := range s.Cases {
			if c.Name == "" || c.Classname == "" || c.Time == "" {
				t.Errorf("testcase without name, classname or time: %+v", c)
			}
		}
		n += len(s.Cases)
	}
	if d.Tests != n {
		t.Errorf("testsuites says %d tests, has %d", d.Tests, n)
	}
	return d
}

// TestMatrixCommand runs baseline with the in-process mutex and Redis: the
// negative control is caught, Redis is valid, both as expected: exit 0, a
// table, a line per cell, a valid junit.xml with one passing testcase per
// cell.
func TestMatrixCommand(t *testing.T) {
	requireRedis(t)
	store := t.TempDir()
	code, out, stderr := runCLI(t, "matrix", "--scenarios", "baseline", "--backends", "mutex,redis-token", "--duration", "1s", "--store", store)
	if code != exitValid {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	for _, w := range []string{"SCENARIO", "baseline  mutex", "invalid  invalid", "AS EXPECTED: 2 as expected (2 cells)", "report:   " + store} {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	// Not a terminal: one plain line per cell.
	for _, w := range []string{"[1/2] baseline / mutex (seed 1): invalid, as expected", "[2/2] baseline / redis-token (seed 1): valid, as expected"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks the cell line %q:\n%s", w, stderr)
		}
	}
	if strings.Contains(stderr, "\r") {
		t.Errorf("progress drew a bar on a non-terminal: %q", stderr)
	}
	d := parseJUnit(t, filepath.Join(store, "matrix", "latest", reports.FileJUnit))
	if d.Tests != 2 || d.Failures != 0 || d.Errors != 0 || len(d.Suites) != 1 || d.Suites[0].Name != "locktorture/matrix/baseline" {
		t.Errorf("junit: %+v", d)
	}

	// --plan lists the cells and runs nothing.
	code, out, _ = runCLI(t, "matrix", "--scenarios", "baseline", "--backends", "mutex,redis-token", "--shard", "2/2", "--plan")
	// Shards are dealt by estimated time: the longer Redis cell first, to
	// shard 1; the mutex's to shard 2.
	if code != exitValid || strings.Split(out, "\n")[0] != "baseline / mutex (seed 1)" || !strings.Contains(out, "shard 2/2: 1 cell, estimated 5s") {
		t.Errorf("--plan: exit %d, %q", code, out)
	}
}

// TestMatrixExitCodes: a cell that differs from its expectation exits 1
// and is a JUnit failure; a harness error exits 255.
func TestMatrixExitCodes(t *testing.T) {
	// The in-process mutex is always caught, so expecting valid is wrong.
	wrong := writeFile(t, "wrong.yaml", "name: wrong-expectation\nbackend: mutex\nbackends: [mutex]\nclients: 3\nduration: 500ms\nexpect: {valid: valid}\n")
	store := t.TempDir()
	code, out, stderr := runCLI(t, "matrix", "--scenarios", wrong, "--store", store, "--quiet")
	if code != exitInvalid {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "DIFFERS: expected valid, got invalid") || !strings.Contains(out, "NOT AS EXPECTED") {
		t.Errorf("stdout should say which cell differs:\n%s", out)
	}
	if d := parseJUnit(t, filepath.Join(store, "matrix", "latest", reports.FileJUnit)); d.Failures != 1 || d.Tests != 1 {
		t.Errorf("junit should have the one failing cell: %+v", d)
	}

	// No temporary directory for the servers: the run fails with a harness error.
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "gone"))
	code, out, stderr = runCLI(t, "matrix", "--scenarios", wrong, "--store", t.TempDir(), "--quiet")
	if code != exitHarness {
		t.Fatalf("exit %d, want 255\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "ERROR:") || !strings.Contains(out, "1 harness error") {
		t.Errorf("stdout should show the harness error:\n%s", out)
	}
}

// snapshotDir reads every regular file under dir, by relative path.
func snapshotDir(t *testing.T, dir string) map[string][]byte {
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

// TestReportRegeneratesRun: `locktorture report` draws a stored
// kleppmann-pause run's files again, byte for byte, with no servers, and
// twice in a row the same.
func TestReportRegeneratesRun(t *testing.T) {
	requireRedis(t)
	store := t.TempDir()
	code, out, stderr := runCLI(t, "run", "--scenario", "kleppmann-pause", "--store", store, "--quiet")
	if code != exitInvalid {
		t.Fatalf("kleppmann-pause exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	before := snapshotDir(t, dir)
	// run.json (the report's inputs beyond results.json) stays; everything
	// drawn from it goes.
	if _, ok := before[reports.FileRunInfo]; !ok {
		t.Fatalf("the run did not write %s", reports.FileRunInfo)
	}
	drawn := []string{reports.FileIndex, reports.FileTimeline, reports.FileLatency, reports.FileRate, reports.FileLinearizability, reports.FileJUnit}
	for _, f := range drawn {
		if _, ok := before[f]; !ok {
			t.Fatalf("the run did not write %s", f)
		}
		os.Remove(filepath.Join(dir, f))
	}
	for i := range 2 {
		code, out, stderr = runCLI(t, "report", dir)
		if code != exitValid || !strings.Contains(out, "redrew the run") {
			t.Fatalf("report exit %d\n%s\n%s", code, out, stderr)
		}
		after := snapshotDir(t, dir)
		if !reflect.DeepEqual(keys(before), keys(after)) {
			t.Errorf("drawing %d: files %v, want %v", i+1, keys(after), keys(before))
		}
		for name, b := range before {
			if !bytes.Equal(after[name], b) {
				t.Errorf("drawing %d: %s is not the run's own (%d bytes, then %d)", i+1, name, len(b), len(after[name]))
			}
		}
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestShardsMergeCommand: the same matrix as 2 shards in two stores,
// merged, gives the same verdict grid as one run of it.
func TestShardsMergeCommand(t *testing.T) {
	requireRedis(t)
	args := []string{"matrix", "--scenarios", "baseline", "--backends", "mutex,redis-token,redis-naive", "--duration", "1s", "--quiet"}
	whole := t.TempDir()
	if code, out, stderr := runCLI(t, append(args, "--store", whole)...); code != exitValid {
		t.Fatalf("whole matrix exit %d\n%s\n%s", code, out, stderr)
	}
	var shards []string
	for _, s := range []string{"1/2", "2/2"} {
		st := t.TempDir()
		if code, out, stderr := runCLI(t, append(args, "--store", st, "--shard", s)...); code != exitValid {
			t.Fatalf("shard %s exit %d\n%s\n%s", s, code, out, stderr)
		}
		shards = append(shards, filepath.Join(st, "matrix", "latest"))
	}
	merged := t.TempDir()
	code, out, stderr := runCLI(t, append([]string{"merge", "--store", merged}, shards...)...)
	if code != exitValid {
		t.Fatalf("merge exit %d\n%s\n%s", code, out, stderr)
	}
	a, err := matrix.Read(filepath.Join(whole, "matrix", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := matrix.Read(filepath.Join(merged, "matrix", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Cells) != 3 || !reflect.DeepEqual(a.Grid(), b.Grid()) {
		t.Errorf("merged grid differs from one run's:\n%v\n%v", b.Grid(), a.Grid())
	}
	d := parseJUnit(t, filepath.Join(merged, "matrix", "latest", reports.FileJUnit))
	if d.Tests != 3 || d.Failures != 0 {
		t.Errorf("merged junit: %+v", d)
	}
	// A shard alone is not the whole matrix: its missing cells fail.
	if code, out, _ := runCLI(t, "merge", "--store", t.TempDir(), shards[0]); code != exitInvalid || !strings.Contains(out, "MISSING") {
		t.Errorf("merging one shard of two: exit %d\n%s", code, out)
	}
}

// TestMatrixPrestartFlag: matrix starts the servers of a lane's next
// PostgreSQL cell ahead by default (its run.log says so, the first
// cell's does not), and --prestart=false starts each cell's when its turn
// comes.
func TestMatrixPrestartFlag(t *testing.T) {
	testenv.Require(t, "postgres")
	for _, tc := range []struct {
		flags []string
		ahead []bool // per cell, in plan order
	}{
		{nil, []bool{false, true}},
		{[]string{"--prestart=false"}, []bool{false, false}},
	} {
		t.Run(fmt.Sprint(tc.flags), func(t *testing.T) {
			store := t.TempDir()
			args := append([]string{"matrix", "--scenarios", "baseline", "--backends", "pg-advisory", "--seeds", "2", "--parallel", "1",
				"--duration", "300ms", "--quiet", "--store", store}, tc.flags...)
			if code, out, stderr := runCLI(t, args...); code != exitValid {
				t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
			}
			dir := filepath.Join(store, "matrix", "latest")
			m, err := matrix.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Cells) != len(tc.ahead) {
				t.Fatalf("%d cells, want %d", len(m.Cells), len(tc.ahead))
			}
			for i, c := range m.Cells {
				log, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(c.Dir), reports.FileRunLog))
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Contains(string(log), "servers started ahead"); got != tc.ahead[i] {
					t.Errorf("cell %d: run.log says servers started ahead: %v, want %v", i, got, tc.ahead[i])
				}
			}
		})
	}
}
