package reports

import (
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/matrix"
)

// TestCompareNamesLibraries: a row whose runs recorded a library lists it,
// with its version, under the text table and under the row's name in the
// HTML; a row of the project's own lists nothing.
func TestCompareNamesLibraries(t *testing.T) {
	lib := &checker.Library{Name: "github.com/redis/rueidis/rueidislock", Version: "v1.0.79", Language: "Go"}
	cell := func(b string, l *checker.Library) matrix.Cell {
		return matrix.Cell{CellKey: matrix.CellKey{Scenario: "pause", Backend: b, Seed: 1}, Expected: "invalid",
			Verdict: "invalid", AsExpected: true, Safety: &matrix.Safety{StaleHolders: 1}, Library: l}
	}
	m := &matrix.Matrix{Compare: true, Seeds: 1, Scenarios: []string{"pause"}, Backends: []string{"rueidislock", "redis-token"},
		Cells: []matrix.Cell{cell("rueidislock", lib), cell("redis-token", nil)}}
	txt := CompareTable(m)
	if !strings.Contains(txt, "LIBRARIES:\n  rueidislock: github.com/redis/rueidis/rueidislock v1.0.79 (Go)\n") {
		t.Errorf("the text table does not list the library:\n%s", txt)
	}
	if strings.Contains(txt, "redis-token:") {
		t.Errorf("a lock of the project's own is listed as a library:\n%s", txt)
	}
	html, err := compareHTML(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "github.com/redis/rueidis/rueidislock v1.0.79 (Go)") {
		t.Error("compare.html does not name the library")
	}
}
