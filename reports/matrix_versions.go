package reports

import (
	"fmt"
	"path"
	"strings"

	"github.com/locktorture/locktorture/matrix"
)

// versionPair is one row of a version grid: a scenario/backend pair (and
// a comparison's fencing mode).
type versionPair struct{ scenario, backend, fencing string }

func (p versionPair) String() string {
	s := p.scenario + " / " + p.backend
	if p.fencing != "" {
		s += " (fenced)"
	}
	return s
}

// versionGrid is the grid of a matrix with a version axis: one row per
// scenario/backend pair, one column per version set, each square the
// pair's runs with that set and the versions their servers reported.
func versionGrid(m *matrix.Matrix) (rows, cols []string, sq [][]gridCell) {
	var pairs []versionPair
	seen := map[versionPair]bool{}
	add := func(p versionPair) {
		if !seen[p] {
			seen[p] = true
			pairs = append(pairs, p)
		}
	}
	for _, k := range m.Planned {
		add(versionPair{k.Scenario, k.Backend, k.Fencing})
	}
	for _, c := range m.Cells {
		add(versionPair{c.Scenario, c.Backend, c.Fencing})
	}
	type at struct {
		p versionPair
		v string
	}
	cells := map[at][]matrix.Cell{}
	for _, c := range m.Cells {
		k := at{versionPair{c.Scenario, c.Backend, c.Fencing}, c.Version}
		cells[k] = append(cells[k], c)
	}
	refused := map[at]string{}
	for _, s := range m.Skipped {
		if s.Version != "" {
			p := versionPair{s.Scenario, s.Backend, ""}
			add(p)
			refused[at{p, s.Version}] = s.Why
		}
	}
	planned := map[at]bool{}
	for _, k := range m.Planned {
		planned[at{versionPair{k.Scenario, k.Backend, k.Fencing}, k.Version}] = true
	}
	for _, v := range m.Versions {
		cols = append(cols, v.Name)
	}
	sq = make([][]gridCell, len(pairs))
	for i, p := range pairs {
		rows = append(rows, p.String())
		sq[i] = make([]gridCell, len(cols))
		for j, v := range cols {
			g := &sq[i][j]
			k := at{p, v}
			switch cs := cells[k]; {
			case len(cs) > 0:
				fillSquare(g, cs, true)
			case refused[k] != "":
				g.Class, g.Text, g.Title = "na", "refused", refused[k]
			case planned[k]:
				g.Class, g.Text, g.Title = "error", "not run", "planned, but this matrix did not run it"
			default:
				g.Class, g.Text, g.Title = "none", "—", "not planned with this version set"
			}
		}
	}
	return rows, cols, sq
}

// fillSquare fills a grid square with its cells' runs (one per seed; with
// versions, each run's label ends with the versions its servers reported).
func fillSquare(g *gridCell, cs []matrix.Cell, versions bool) {
	g.Class = "ok"
	var titles []string
	for _, c := range cs {
		r := gridRun{Label: cellLabel(c), Class: cellClass(c)}
		if len(cs) > 1 {
			r.Label = fmt.Sprintf("s%d %s", c.Seed, r.Label)
		}
		if sv := c.ServerVersionText(); versions && sv != "" {
			r.Label += " · " + sv
		}
		if c.Dir != "" {
			r.Href = path.Join(c.Dir, FileIndex)
		}
		t := fmt.Sprintf("%s: %s, expected %s", c.CellKey, c.Verdict, c.Expected)
		if c.Why != "" && !c.AsExpected {
			t += " — " + c.Why
		}
		r.Title = t
		titles = append(titles, t)
		g.Runs = append(g.Runs, r)
		switch r.Class {
		case "error":
			if g.Class == "ok" {
				g.Class = "error"
			}
		case "bad":
			g.Class = "bad"
		}
	}
	g.Title = strings.Join(titles, "\n")
}

// versionDiffLines are the pairs whose verdicts differ between version
// sets, one line each.
func versionDiffLines(m *matrix.Matrix) []string {
	var out []string
	for _, d := range m.VersionDiffs() {
		out = append(out, d.String())
	}
	return out
}
