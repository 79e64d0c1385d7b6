package reports

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture/matrix"
	"github.com/locktorture/locktorture/scenarios"
)

// TestComparison: cells sum the seeds of one pair only; a pair not run
// says so (never 0 or safe); fenced runs whose stale holders wrote nothing
// stale are told apart from unsafe ones; speed comes from the baseline.
func TestComparison(t *testing.T) {
	cell := func(sc, b, fencing string, seed int64, s matrix.Safety, ok bool) matrix.Cell {
		return matrix.Cell{CellKey: matrix.CellKey{Scenario: sc, Backend: b, Seed: seed, Fencing: fencing},
			Verdict: "invalid", AsExpected: ok, Safety: &s, HoldsPerSecond: float64(seed * 10), AcquireP50: 1000, AcquireP99: 5000}
	}
	m := &matrix.Matrix{Compare: true, Backends: []string{"a", "b"}, Scenarios: []string{"baseline", "pause", "kill-session"},
		Skipped: []matrix.Skipped{{Scenario: "kill-session", Backend: "b", Why: "not run: no session"}},
		Cells: []matrix.Cell{
			cell("baseline", "a", "", 1, matrix.Safety{}, true), cell("baseline", "a", "", 2, matrix.Safety{}, true), cell("baseline", "a", "", 3, matrix.Safety{}, true),
			cell("pause", "a", "", 1, matrix.Safety{StaleHolders: 1, LostUpdates: 1}, true),
			cell("pause", "a", "", 2, matrix.Safety{}, false),
			cell("pause", "a", "all", 1, matrix.Safety{StaleHolders: 1, RejectedStale: 2}, true),
			cell("kill-session", "a", "", 1, matrix.Safety{}, true),
			cell("pause", "b", "", 1, matrix.Safety{}, true),
		}}
	c := buildComparison(m)
	if len(c.Families) != 2 || c.Families[0] != "pause" || c.Families[1] != "kill-session" {
		t.Fatalf("families %v", c.Families)
	}
	if len(c.Rows) != 3 || c.Rows[0].Label() != "a" || c.Rows[1].Label() != "a + fencing all" || c.Rows[2].Label() != "b" {
		t.Fatalf("rows %+v", c.Rows)
	}
	a := c.Rows[0]
	if !a.Speed || a.Cycles != 20 || a.P50 != 1000 {
		t.Errorf("speed %+v", a)
	}
	if got := a.Cells[0].Summary(); got != "unsafe: 1 stale holder, 1 lost update (1/2 runs)" {
		t.Errorf("a pause: %q", got)
	}
	if got := c.Rows[1].Cells[0].Summary(); !strings.Contains(got, "every stale write rejected by fencing (2)") {
		t.Errorf("a fenced pause: %q", got)
	}
	if c.Rows[1].Cells[1].Summary() != "not run" || c.Rows[2].Cells[1].Summary() != "not run" || c.Rows[2].Cells[1].NotRun == "" {
		t.Errorf("not run cells: %+v %+v", c.Rows[1].Cells[1], c.Rows[2].Cells[1])
	}
	if c.Rows[2].Speed {
		t.Errorf("b has no baseline, yet a speed")
	}
	if a.AsExpected != 5 || a.Judged != 6 {
		t.Errorf("a as expected %d/%d", a.AsExpected, a.Judged)
	}
	txt := CompareTable(m)
	if !strings.Contains(txt, "NOT AS EXPECTED 1/2") || !strings.Contains(txt, "not run") {
		t.Errorf("table:\n%s", txt)
	}
	if _, err := comparePNG(m); err != nil {
		t.Error(err)
	}
	if _, err := compareHTML(m); err != nil {
		t.Error(err)
	}
}

// TestCompareEither: a cell expected valid or invalid, either
// (scenarios.Either), says so — [either] in compare.txt with its reason
// below the table, and in compare.html — whatever its runs' verdicts, and
// a cell held to one verdict does not.
func TestCompareEither(t *testing.T) {
	why := "Session.Done() is not promised before the server revokes the lease"
	cell := func(b string, seed int64, verdict, expected string, s matrix.Safety) matrix.Cell {
		c := matrix.Cell{CellKey: matrix.CellKey{Scenario: "renew-partition", Backend: b, Seed: seed},
			Verdict: verdict, Expected: expected, AsExpected: true, Safety: &s}
		if expected == scenarios.Either {
			c.ExpectedWhy = why
		}
		return c
	}
	m := &matrix.Matrix{Compare: true, Backends: []string{"etcd-concurrency", "redis-renew"}, Scenarios: []string{"renew-partition"},
		Cells: []matrix.Cell{
			cell("etcd-concurrency", 1, "valid", scenarios.Either, matrix.Safety{}),
			cell("etcd-concurrency", 2, "invalid", scenarios.Either, matrix.Safety{StaleHolders: 1}),
			cell("redis-renew", 1, "valid", "valid", matrix.Safety{}),
		}}
	c := buildComparison(m)
	if got := c.Rows[0].Cells[0].EitherWhy(); got != why {
		t.Errorf("etcd-concurrency's cell: either %q, want %q", got, why)
	}
	if got := c.Rows[1].Cells[0].EitherWhy(); got != "" {
		t.Errorf("redis-renew's cell, expected valid: either %q", got)
	}
	txt := CompareTable(m)
	lines := strings.Split(txt, "\n")
	var etcd, redis string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "etcd-concurrency "):
			etcd = l
		case strings.HasPrefix(l, "redis-renew "):
			redis = l
		}
	}
	if !strings.Contains(etcd, "UNSAFE sh1 (1/2) [either]") || strings.Contains(etcd, "NOT AS EXPECTED") || strings.Contains(redis, "[either]") {
		t.Errorf("rows:\n%s\n%s", etcd, redis)
	}
	if !strings.Contains(txt, "EITHER VERDICT EXPECTED") || !strings.Contains(txt, "  etcd-concurrency, renew-partition: "+why+"\n") {
		t.Errorf("no reason below the table:\n%s", txt)
	}
	h, err := compareHTML(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h), "either verdict expected: "+why) {
		t.Errorf("compare.html does not say the cell takes either verdict")
	}
	if _, err := comparePNG(m); err != nil {
		t.Error(err)
	}
}

// TestComparisonFamilyScenarios: a family's other scenario
// (failover-leader) fills the family's column, beside the backends its
// first scenario runs and the one it says is not run; it adds no column.
func TestComparisonFamilyScenarios(t *testing.T) {
	cell := func(sc, b string) matrix.Cell {
		s := matrix.Safety{}
		return matrix.Cell{CellKey: matrix.CellKey{Scenario: sc, Backend: b, Seed: 1}, Verdict: "valid", AsExpected: true, Safety: &s}
	}
	m := &matrix.Matrix{Compare: true, Backends: []string{"redis-token", "etcd", "redlock"}, Scenarios: []string{"baseline", "failover", "failover-leader"},
		Skipped: []matrix.Skipped{{Scenario: "failover", Backend: "redlock", Why: "not run: independent servers"}},
		Cells:   []matrix.Cell{cell("failover", "redis-token"), cell("failover-leader", "etcd")}}
	c := buildComparison(m)
	if len(c.Families) != 1 || c.Families[0] != "failover" {
		t.Fatalf("families %v, want [failover]", c.Families)
	}
	if len(c.Rows) != 3 {
		t.Fatalf("rows %+v", c.Rows)
	}
	for i, want := range []string{"safe", "safe", "not run"} {
		if got := c.Rows[i].Cells[0].Summary(); got != want {
			t.Errorf("%s failover: %q, want %q", c.Rows[i].Label(), got, want)
		}
	}
}

// TestCompareMissing: a cell no merged shard ran is missing, red, in the
// text table and the page, and gives the baseline no speed.
func TestCompareMissing(t *testing.T) {
	miss := func(sc string) matrix.Cell {
		return matrix.Cell{CellKey: matrix.CellKey{Scenario: sc, Backend: "a", Seed: 1}, Verdict: matrix.VerdictMissing, Expected: "?", Why: "no shard ran this cell"}
	}
	m := &matrix.Matrix{Compare: true, Backends: []string{"a"}, Scenarios: []string{"baseline", "pause"}, Cells: []matrix.Cell{miss("baseline"), miss("pause")}}
	txt := CompareTable(m)
	if !strings.Contains(txt, "MISSING 1/1") || !strings.Contains(txt, "2 missing") {
		t.Errorf("table:\n%s", txt)
	}
	c := buildComparison(m)
	if len(c.Rows) != 1 || c.Rows[0].Speed || c.Rows[0].Cells[0].Class() != classMissing || compareColours[classMissing] != compareColours[classUnsafe] {
		t.Errorf("missing cell: %+v", c.Rows)
	}
	page, err := compareHTML(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "missing: no shard ran it") || strings.Contains(string(page), `href="/index.html"`) {
		t.Errorf("compare.html: the missing cell is not said, or links to nowhere")
	}
}
