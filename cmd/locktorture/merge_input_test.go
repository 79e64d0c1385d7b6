package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/locktorture/locktorture/matrix"
)

// shardCommand is the command the synthetic shards below claim to come
// from.
const shardCommand = "locktorture matrix --scenarios baseline,kleppmann-pause --backends redis-token,redis-naive --shard 1/2"

// writeShards plans baseline and kleppmann-pause over redis-token and
// redis-naive in two shards and writes each shard's results.json (every
// cell as its claim expects, as faithful runs would end) into a matrix
// directory of its own, after edit (when not nil) has changed shard 1's
// matrix. No run: only results.json, as a shard's CI job leaves it.
func writeShards(t *testing.T, edit func(m *matrix.Matrix)) (dirs []string) {
	t.Helper()
	m, cells, err := matrix.Plan(matrix.PlanOptions{Scenarios: []string{"baseline", "kleppmann-pause"}, Backends: []string{"redis-token", "redis-naive"}, Command: shardCommand})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		s := *m
		s.Shard, s.Started = []string{"", "1/2", "2/2"}[i], "20260101T00000"+string(rune('0'+i))
		s.Cells = nil
		for _, c := range matrix.Share(cells, i, 2) {
			s.Cells = append(s.Cells, matrix.Cell{CellKey: c.Key, Expected: c.Expect.Valid, ExpectedCheckers: c.Expect.Checkers,
				Verdict: c.Expect.Valid, Checkers: c.Expect.Checkers, AsExpected: true, Seconds: 1})
		}
		s.Finish()
		if i == 1 && edit != nil {
			edit(&s)
		}
		d := filepath.Join(t.TempDir(), "matrix", s.Started)
		if err := matrix.Write(d, &s); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

// cellOf is the cell of shard m for scenario/backend, or fails t.
func cellOf(t *testing.T, m *matrix.Matrix, scenario, backend string) *matrix.Cell {
	t.Helper()
	for i := range m.Cells {
		if m.Cells[i].Scenario == scenario && m.Cells[i].Backend == backend {
			return &m.Cells[i]
		}
	}
	t.Fatalf("no cell %s / %s in shard %s: %v", scenario, backend, m.Shard, m.Cells)
	return nil
}

// TestMergeJudgesShardsAgain: merge trusts nothing in a shard's
// results.json it did not check. A cell is judged again against its
// scenario's claim for its backend, never taken as "as expected" because
// the shard says so; a verdict or checker verdict that is none, or a cell
// no plan has, is refused (254) in one line naming the file and the cell,
// and nothing is written. Every one was merged AS EXPECTED before.
func TestMergeJudgesShardsAgain(t *testing.T) {
	// The cell of shard 1 that the edits below change: kleppmann-pause's
	// (invalid expected), the one shard 1 holds.
	var kp string
	writeShards(t, func(m *matrix.Matrix) {
		for _, c := range m.Cells {
			if c.Scenario == "kleppmann-pause" && kp == "" {
				kp = c.Backend
			}
		}
	})
	if kp == "" {
		t.Fatal("shard 1 holds no kleppmann-pause cell")
	}
	for _, tc := range []struct {
		name string
		edit func(m *matrix.Matrix)
		code int
		want []string // on stderr (refused) or stdout (judged)
	}{
		{"faithful", nil, exitValid, []string{"AS EXPECTED"}},
		{"verdict banana", func(m *matrix.Matrix) { cellOf(t, m, "kleppmann-pause", kp).Verdict = "banana" },
			exitBadArgs, []string{"results.json", "kleppmann-pause / " + kp, `"banana"`}},
		{"checker verdict banana", func(m *matrix.Matrix) {
			c := cellOf(t, m, "kleppmann-pause", kp)
			c.Checkers = map[string]string{"mutex": "banana"}
		}, exitBadArgs, []string{"results.json", "kleppmann-pause / " + kp, `"banana"`}},
		{"unknown checker", func(m *matrix.Matrix) {
			c := cellOf(t, m, "kleppmann-pause", kp)
			c.Checkers = map[string]string{"vibes": "valid"}
		}, exitBadArgs, []string{"results.json", "kleppmann-pause / " + kp, `"vibes"`}},
		{"missing in a shard", func(m *matrix.Matrix) { cellOf(t, m, "kleppmann-pause", kp).Verdict = matrix.VerdictMissing },
			exitBadArgs, []string{"results.json", "kleppmann-pause / " + kp, `"missing"`}},
		{"valid where the plan expects invalid", func(m *matrix.Matrix) {
			c := cellOf(t, m, "kleppmann-pause", kp)
			c.Verdict, c.Checkers = "valid", map[string]string{"mutex": "valid", "linearizable": "valid", "lost-update": "valid"}
		}, exitInvalid, []string{"NOT AS EXPECTED", "expected invalid, got valid"}},
		{"valid, and expected valid by the shard", func(m *matrix.Matrix) {
			c := cellOf(t, m, "kleppmann-pause", kp)
			c.Verdict, c.Expected, c.ExpectedCheckers, c.Checkers = "valid", "valid", nil, map[string]string{"mutex": "valid"}
		}, exitInvalid, []string{"NOT AS EXPECTED", "expected invalid, got valid"}},
		{"no claim on a built-in row", func(m *matrix.Matrix) {
			c := cellOf(t, m, "kleppmann-pause", kp)
			c.Verdict, c.Expected, c.ExpectedCheckers, c.Checkers = "valid", matrix.NoClaim, nil, nil
		}, exitInvalid, []string{"NOT AS EXPECTED", "expected invalid, got valid"}},
		{"an error as expected", func(m *matrix.Matrix) {
			c := cellOf(t, m, "kleppmann-pause", kp)
			c.Verdict, c.Error, c.Checkers = matrix.VerdictError, "boom", nil
		}, exitHarness, []string{"boom"}},
		{"a cell no plan has", func(m *matrix.Matrix) {
			m.Cells = append(m.Cells, matrix.Cell{CellKey: matrix.CellKey{Scenario: "kleppmann-pause", Backend: "mutex", Seed: 1}, Verdict: "valid", Expected: "valid", AsExpected: true})
		}, exitBadArgs, []string{"results.json", "kleppmann-pause / mutex (seed 1)", "no plan"}},
		{"a cell of another seed", func(m *matrix.Matrix) {
			m.Cells = append(m.Cells, matrix.Cell{CellKey: matrix.CellKey{Scenario: "baseline", Backend: "redis-token", Seed: 7}, Verdict: "valid", Expected: "valid", AsExpected: true})
		}, exitBadArgs, []string{"results.json", "baseline / redis-token (seed 7)", "no plan"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dirs := writeShards(t, tc.edit)
			store := t.TempDir()
			code, out, stderr := runCLI(t, append([]string{"merge", "--store", store}, dirs...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, stderr)
			}
			if code == exitBadArgs {
				for _, w := range tc.want {
					oneLine(t, stderr, "locktorture merge: ", w)
				}
				if !strings.Contains(stderr, filepath.Join(dirs[0], "results.json")) {
					t.Errorf("stderr does not name shard 1's results.json %s:\n%s", filepath.Join(dirs[0], "results.json"), stderr)
				}
				if out != "" {
					t.Errorf("a refused merge printed:\n%s", out)
				}
				if ents, _ := os.ReadDir(filepath.Join(store, "matrix")); len(ents) != 0 {
					t.Errorf("a refused merge wrote %v", ents)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			m, err := matrix.Read(filepath.Join(store, "matrix", "latest"))
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Cells) != 4 {
				t.Errorf("merged %d cells, want 4", len(m.Cells))
			}
			for _, c := range m.Cells {
				if c.Scenario == "kleppmann-pause" && c.Expected != "invalid" {
					t.Errorf("%s: expected %q, want the claim's invalid", c.CellKey, c.Expected)
				}
			}
		})
	}
}

// TestMergeBrokenShard: a shard whose results.json is garbage, cut short
// or empty — given as its matrix directory, the file itself, or a store
// whose newest matrix it is — is refused (254) naming the file; it was
// "taken as a shard that never came", its cells MISSING. A path that is
// not a matrix's results.json (a file of another kind, a device, a named
// pipe) is named itself, never its parent directory; a directory that
// holds no matrix at all is still a shard that never came.
func TestMergeBrokenShard(t *testing.T) {
	good := writeShards(t, nil)
	whole, err := os.ReadFile(filepath.Join(good[1], "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	broken := func(text string) string {
		d := filepath.Join(t.TempDir(), "matrix", "20260101T000002")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "results.json"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	fifoDir := filepath.Join(t.TempDir(), "m")
	if err := os.MkdirAll(fifoDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(fifoDir, "results.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	run, _ := json.Marshal(map[string]any{"valid": true, "scenario": "baseline", "backend": "mutex"})
	for _, tc := range []struct {
		name  string
		path  func() string
		named func(p string) string // the path stderr must name
		want  string
	}{
		{"garbage", func() string { return broken("this is not json") }, inDir, "invalid character"},
		{"cut", func() string { return broken(string(whole[:len(whole)/2])) }, inDir, "unexpected end of JSON input"},
		{"empty", func() string { return broken("") }, inDir, "unexpected end of JSON input"},
		{"garbage, the file named", func() string { return filepath.Join(broken("{{"), "results.json") }, itself, "invalid character"},
		{"garbage, newest in a store", func() string {
			d := broken("][")
			return filepath.Dir(filepath.Dir(d))
		}, func(p string) string { return filepath.Join(p, "matrix", "20260101T000002", "results.json") }, "invalid character"},
		{"a run's results.json", func() string { return broken(string(run)) }, inDir, "not a matrix's results"},
		{"the password file", func() string { return "/etc/passwd" }, itself, "/etc/passwd"},
		{"the zero device", func() string { return "/dev/zero" }, itself, "not a regular file"},
		{"a named pipe", func() string { return fifoDir }, inDir, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.path()
			store := t.TempDir()
			code, out, stderr := runCLI(t, "merge", "--store", store, good[0], p)
			if code != exitBadArgs {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitBadArgs, out, stderr)
			}
			oneLine(t, stderr, "locktorture merge: ", tc.want)
			if named := tc.named(p); !strings.Contains(stderr, named+":") && !strings.Contains(stderr, named+" ") {
				t.Errorf("stderr does not name %s:\n%s", named, stderr)
			}
			if strings.Contains(stderr, "never came") || strings.Contains(out, "MISSING") {
				t.Errorf("a broken shard taken as one that never came:\n%s\n%s", out, stderr)
			}
			if ents, _ := os.ReadDir(filepath.Join(store, "matrix")); len(ents) != 0 {
				t.Errorf("a refused merge wrote %v", ents)
			}
		})
	}
	// A store with no matrix at all is a shard that never came: its cells
	// missing, said on stderr, exit 1.
	empty := t.TempDir()
	code, out, stderr := runCLI(t, "merge", "--store", t.TempDir(), good[0], empty)
	if code != exitInvalid || !strings.Contains(stderr, empty+" holds no matrix") || !strings.Contains(out, "MISSING") {
		t.Errorf("a store with no matrix: exit %d\n%s\n%s", code, out, stderr)
	}
	// The two good shards merge.
	if code, out, stderr := runCLI(t, "merge", "--store", t.TempDir(), good[0], good[1]); code != exitValid {
		t.Errorf("good shards: exit %d\n%s\n%s", code, out, stderr)
	}
}

// inDir is dir's results.json.
func inDir(dir string) string { return filepath.Join(dir, "results.json") }

// itself is p.
func itself(p string) string { return p }
