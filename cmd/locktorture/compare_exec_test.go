package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/reports"
)

// TestCompareExecFlag: --exec NAME='COMMAND ARGS' is checked before any
// server starts: a bad value is one line and exit 254; a good one plans
// the program's row beside the built-ins --backends chose, over every
// family asked for.
func TestCompareExecFlag(t *testing.T) {
	store := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string // in the one line on stderr
	}{
		{"no equals sign", []string{"--exec", "/bin/true"}, "want NAME='COMMAND ARGS'"},
		{"empty name", []string{"--exec", "=/bin/true"}, "empty name"},
		{"blank name", []string{"--exec", "  =/bin/true"}, "empty name"},
		{"empty command", []string{"--exec", "mine="}, "no command"},
		{"blank command", []string{"--exec", "mine=   "}, "no command"},
		{"built-in name", []string{"--exec", "redis-token=/bin/true"}, `"redis-token" is a built-in backend`},
		{"exec's own name", []string{"--exec", "exec=/bin/true"}, `"exec" is a built-in backend`},
		{"name twice", []string{"--exec", "mine=/bin/true", "--exec", "mine=/bin/false"}, `"mine" given twice`},
		{"name with a slash", []string{"--exec", "a/b=/bin/true"}, "letters, digits"},
		{"name with a space", []string{"--exec", "my row=/bin/true"}, "letters, digits"},
		{"name over 100 characters", []string{"--exec", strings.Repeat("a", 101) + "=/bin/true"}, "at most 100 characters, not 101"},
		{"built-in name in other case", []string{"--exec", "Redis-Token=/bin/true"}, `only in case from the built-in backend "redis-token"`},
		{"name twice in other case", []string{"--exec", "mine=/bin/true", "--exec", "MINE=/bin/false"}, `"MINE" given twice`},
		{"command not found", []string{"--exec", "mine=/no/such/program --flag"}, "/no/such/program"},
		{"command not on PATH", []string{"--exec", "mine=no-such-program-xyz"}, "no-such-program-xyz"},
		{"unbalanced quote", []string{"--exec", "mine=/bin/echo 'half"}, "unbalanced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"compare", "--families", "pause", "--backends", "redis-token", "--seeds", "1", "--store", store}, tc.args...)
			code, out, stderr := runCLI(t, args...)
			if code != exitBadArgs {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitBadArgs, out, stderr)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "locktorture compare: --exec") || !strings.Contains(lines[0], tc.want) {
				t.Errorf("stderr is not one line naming --exec and %q:\n%s", tc.want, stderr)
			}
		})
	}
	entries, err := os.ReadDir(store)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		t.Errorf("a refused --exec left %d entries in the store", len(entries))
	}

	// The built binary says the same, and exits 254.
	cmd := exec.Command(binPath, "compare", "--exec", "mine", "--store", store)
	outb, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitBadArgs || !strings.Contains(string(outb), "want NAME='COMMAND ARGS'") {
		t.Errorf("binary: %v\n%s", err, outb)
	}

	// A name of 100 characters is a name.
	long := strings.Repeat("b", 100)
	if code, out, stderr := runCLI(t, "compare", "--families", "pause", "--backends", "redis-token", "--seeds", "1", "--plan", "--exec", long+"=/bin/true"); code != exitValid || !strings.Contains(out, "pause / "+long+" (seed 1)") {
		t.Errorf("a 100-character name: exit %d\n%s\n%s", code, out, stderr)
	}

	// A good one: the row is planned over the families, --backends still
	// choosing the built-ins, and the command split as a shell splits it.
	code, out, stderr := runCLI(t, "compare", "--families", "pause,clock", "--backends", "redis-token", "--seeds", "1", "--plan",
		"--exec", `mine=/bin/echo "two words" three`, "--exec", "theirs=true")
	if code != exitValid {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, w := range []string{"baseline / mine (seed 1)", "pause / mine (seed 1)", "clock / mine (seed 1)", "pause / theirs (seed 1)", "pause / redis-token (seed 1)"} {
		if !strings.Contains(out, w) {
			t.Errorf("plan lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "/ redis-naive") {
		t.Errorf("--backends no longer chooses the built-ins:\n%s", out)
	}
	// The row is gone once the command is done: the next compare has no
	// such backend.
	code, _, stderr = runCLI(t, "compare", "--families", "pause", "--backends", "mine", "--seeds", "1", "--plan")
	if code != exitBadArgs || !strings.Contains(stderr, `"mine"`) {
		t.Errorf("the exec row outlived its compare: exit %d, %s", code, stderr)
	}
}

// TestCompareExecRow: a program of the user's (the Go example adapter, a
// lease lock over one Redis) beside redis-token under a pause: its row is
// in compare.txt, unsafe like redis-token's, judged against no claim, and
// in results.json, junit.xml and compare.html by its name. Under clock it
// is not run (the adapter announces no clock ability), with the reason,
// and the compare still exits 0.
func TestCompareExecRow(t *testing.T) {
	requireRedis(t)
	bin := filepath.Join(t.TempDir(), "go-example")
	if out, err := exec.Command("go", "build", "-o", bin, "../../clients/go-example").CombinedOutput(); err != nil {
		t.Fatalf("build the example adapter: %v\n%s", err, out)
	}
	store := t.TempDir()
	code, out, stderr := runCLI(t, "compare", "--families", "pause,clock", "--backends", "redis-token", "--seeds", "1", "--store", store, "--quiet",
		"--exec", "mine="+bin)
	if code != exitValid {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	dir := filepath.Join(store, "matrix", "latest")
	txt, err := os.ReadFile(filepath.Join(dir, "compare.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compare.txt:\n%s", txt)
	row := regexp.MustCompile(`(?m)^mine +.*$`).FindString(string(txt))
	if row == "" {
		t.Fatalf("compare.txt has no row mine:\n%s", txt)
	}
	if !regexp.MustCompile(`^mine +\S+ +\S+ +\S+ +UNSAFE .* not run +no claim$`).MatchString(row) || strings.Contains(row, "NOT AS EXPECTED") {
		t.Errorf("mine's row is not an unsafe pause, clock not run, judged against no claim: %q", row)
	}
	if !regexp.MustCompile(`(?m)^redis-token +.*UNSAFE`).Match(txt) {
		t.Errorf("compare.txt: redis-token's pause is not unsafe:\n%s", txt)
	}
	m, err := matrix.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	mine := 0
	for _, c := range m.Cells {
		if c.Backend != "mine" {
			continue
		}
		mine++
		if c.Expected != matrix.NoClaim || !c.AsExpected || c.Library != nil {
			t.Errorf("results.json: %s: expected %q, as expected %v, library %v", c.CellKey, c.Expected, c.AsExpected, c.Library)
		}
	}
	if mine != 2 {
		t.Errorf("results.json has %d cells of mine, want 2 (baseline, pause)", mine)
	}
	clock := false
	for _, sk := range m.Skipped {
		clock = clock || sk.Scenario == "clock" && sk.Backend == "mine" && strings.Contains(sk.Why, `"clock" ability`)
	}
	if !clock {
		t.Errorf("results.json does not say why clock / mine was not run: %+v", m.Skipped)
	}
	b, _ := json.Marshal(m.Backends)
	if !strings.Contains(string(b), `"mine"`) {
		t.Errorf("results.json backends: %s", b)
	}
	for _, f := range []string{reports.FileJUnit, reports.FileCompareHTML} {
		body, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(body), "mine") {
			t.Errorf("%s does not name the row mine", f)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, reports.FileComparePNG)); err != nil || st.Size() == 0 {
		t.Errorf("compare.png: %v", err)
	}
}
