package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/reports"
)

// TestCompareCommand: one family on two Redis locks and the negative
// control, one seed: the table has a row per backend (and the fenced
// row), the pair that cannot apply says not run with its reason, the
// as-expected check decides the exit code, and the page and its PNG are
// written.
func TestCompareCommand(t *testing.T) {
	requireRedis(t)
	store := t.TempDir()
	code, out, stderr := runCLI(t, "compare", "--families", "kill-session", "--backends", "mutex,redis-token,redis-fenced", "--seeds", "1", "--store", store)
	if code != exitValid {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	for _, w := range []string{"KILL-SESSION", "redis-token ", "redis-fenced + fencing all", "not run", "safe", "AS EXPECTED: 6 as expected (6 cells; 1 scenario/backend pair not applicable)"} {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	dir := filepath.Join(store, "matrix", "latest")
	page, err := os.ReadFile(filepath.Join(dir, reports.FileCompareHTML))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "the in-process mutex has no server session") {
		t.Errorf("compare.html does not give the not-run reason")
	}
	if st, err := os.Stat(filepath.Join(dir, reports.FileComparePNG)); err != nil || st.Size() == 0 {
		t.Errorf("compare.png: %v", err)
	}
	code, _, stderr = runCLI(t, "compare", "--families", "nope", "--store", store)
	if code != exitBadArgs || !strings.Contains(stderr, `unknown family "nope"`) {
		t.Errorf("unknown family: exit %d, %q", code, stderr)
	}
}
