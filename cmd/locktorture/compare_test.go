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

// TestComparePlanFailover: the failover family runs the backends over
// Sentinel as a failover and etcd and ZooKeeper as the loss of their
// leader (with their fenced cells), and still says why it does not run
// the others; nothing runs for --plan.
func TestComparePlanFailover(t *testing.T) {
	code, out, stderr := runCLI(t, "compare", "--families", "failover", "--backends", "redis-token,etcd,zookeeper,redlock", "--seeds", "1", "--plan")
	if code != exitValid {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	for _, w := range []string{"failover / redis-token (seed 1)", "failover-leader / etcd (seed 1)", "failover-leader / etcd, fencing all (seed 1)",
		"failover-leader / zookeeper (seed 1)", "failover-leader / zookeeper, fencing all (seed 1)", "failover / redlock: not run: Redlock runs over independent servers"} {
		if !strings.Contains(out, w) {
			t.Errorf("plan lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "failover / etcd") || strings.Contains(out, "failover-leader / redis-token") {
		t.Errorf("a backend planned in the other half of the family:\n%s", out)
	}
}
