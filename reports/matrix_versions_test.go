package reports

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture/matrix"
)

// TestVersionGrid: with a version axis, the grid has one row per
// scenario/backend pair and one column per version set, each square the
// verdict and the versions its servers reported; a pair whose verdict
// differs between sets is called out at the top of the page and in the
// table, and a refused set shows as refused.
func TestVersionGrid(t *testing.T) {
	cell := func(s, b, v, verdict, sv string, ok bool) matrix.Cell {
		k := matrix.CellKey{Scenario: s, Backend: b, Version: v, Seed: 1}
		return matrix.Cell{CellKey: k, Verdict: verdict, Expected: "invalid", AsExpected: ok, ServerVersions: map[string]string{b + "-0": sv}}
	}
	m := &matrix.Matrix{Kind: matrix.Kind, Started: "20260101T000000",
		Versions: []matrix.Version{{Name: "bullseye"}, {Name: "trixie"}, {Name: "valkey", RedisProgram: "valkey"}},
		Cells: []matrix.Cell{
			cell("zk-pause", "zookeeper", "bullseye", "valid", "3.4.13", false),
			cell("zk-pause", "zookeeper", "trixie", "invalid", "3.9.3", true),
			cell("kleppmann-pause", "redis-token", "bullseye", "invalid", "6.0.16", true),
			cell("kleppmann-pause", "redis-token", "trixie", "invalid", "8.0.2", true),
			cell("kleppmann-pause", "redis-token", "valkey", "invalid", "valkey 8.1.1", true),
		},
		Skipped: []matrix.Skipped{{Scenario: "zk-pause", Backend: "zookeeper", Version: "valkey", Why: "refused: because"}},
	}
	for _, c := range m.Cells {
		m.Planned = append(m.Planned, c.CellKey)
	}
	rows, cols, sq := grid(m)
	if strings.Join(rows, "|") != "zk-pause / zookeeper|kleppmann-pause / redis-token" || strings.Join(cols, "|") != "bullseye|trixie|valkey" {
		t.Fatalf("rows %q, cols %q", rows, cols)
	}
	if got := squareText(sq[1][2]); got != "invalid · valkey 8.1.1" {
		t.Errorf("valkey square %q", got)
	}
	if got := squareText(sq[0][0]); got != "valid ≠ invalid · 3.4.13" {
		t.Errorf("bullseye zk square %q", got)
	}
	if sq[0][2].Text != "refused" || sq[0][2].Title != "refused: because" {
		t.Errorf("refused square %+v", sq[0][2])
	}
	page, err := matrixHTML(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 scenario/backend pair(s) give a different verdict with another version", "zk-pause / zookeeper: bullseye valid, trixie invalid", "scenario / backend \\ version", "redis_program: valkey"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	table := MatrixTable(m)
	for _, want := range []string{"VERSION", "valkey 8.1.1", "VERDICT DIFFERS BETWEEN VERSIONS (1)", "zk-pause / zookeeper @ valkey: refused: because"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if _, err := matrixPNG(m); err != nil {
		t.Fatal(err)
	}
}
