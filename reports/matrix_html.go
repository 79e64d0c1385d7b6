package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"path"

	"github.com/locktorture/locktorture/matrix"
)

// backendStat sums a backend's cells for the comparison bars and table.
type backendStat struct {
	Backend    string
	Cells      int
	AsExpected int
	Holds      int
	Violations int
	Ops        int
	// Span is the cells' summed history span, in seconds.
	Span float64
	// BaseHolds and BaseSpan count the fault-free `baseline` cells only:
	// the same workload for every backend, so their rates compare.
	BaseHolds      int
	BaseViolations int
	BaseSpan       float64
}

// PerThousand is the backend's safety violations per 1,000 holds in its
// fault-free baseline cells, where every backend runs the same workload;
// ok is false when it ran no baseline cell (or granted nothing there).
// Cells under faults are never summed across backends: they differ
// between backends (see locktorture compare for like-with-like faults).
func (s backendStat) PerThousand() (v float64, ok bool) {
	if s.BaseHolds == 0 {
		return 0, false
	}
	return 1000 * float64(s.BaseViolations) / float64(s.BaseHolds), true
}

// CyclesPerSecond is the backend's lock cycles (granted holds) per second,
// from the stats checker, over its fault-free baseline cells; ok is false
// when it ran none.
func (s backendStat) CyclesPerSecond() (v float64, ok bool) {
	if s.BaseSpan <= 0 {
		return 0, false
	}
	return float64(s.BaseHolds) / s.BaseSpan, true
}

// notRun is what a figure reads for a backend that ran no baseline cell.
const notRun = "not run"

// baselineFigure formats a baseline figure, or says it was not run.
func baselineFigure(v float64, ok bool) string {
	if !ok {
		return notRun
	}
	return fmt.Sprintf("%.1f", v)
}

// baselineScenario is the fault-free scenario whose rates compare backends.
const baselineScenario = "baseline"

// backendStats sums the cells of each backend that ran, in column order.
func backendStats(m *matrix.Matrix) []backendStat {
	idx := map[string]int{}
	var out []backendStat
	add := func(b string) {
		if _, ok := idx[b]; !ok {
			idx[b] = len(out)
			out = append(out, backendStat{Backend: b})
		}
	}
	for _, b := range m.Backends {
		add(b)
	}
	for _, c := range m.Cells {
		add(c.Backend)
	}
	for _, c := range m.Cells {
		s := &out[idx[c.Backend]]
		s.Cells++
		if c.AsExpected {
			s.AsExpected++
		}
		s.Holds += c.Holds
		s.Violations += c.Violations
		s.Ops += c.Ops
		s.Span += sec(c.Span)
		if c.Scenario == baselineScenario {
			s.BaseHolds += c.Holds
			s.BaseViolations += c.Violations
			s.BaseSpan += sec(c.Span)
		}
	}
	kept := out[:0]
	for _, s := range out {
		if s.Cells > 0 {
			kept = append(kept, s)
		}
	}
	return kept
}

// gridColumns are the backends shown as columns: the matrix's, then any
// other that a cell names.
func gridColumns(m *matrix.Matrix) []string {
	seen := map[string]bool{}
	var out []string
	for _, b := range m.Backends {
		if !seen[b] {
			seen[b] = true
			out = append(out, b)
		}
	}
	for _, c := range m.Cells {
		if !seen[c.Backend] {
			seen[c.Backend] = true
			out = append(out, c.Backend)
		}
	}
	return out
}

// gridRows are the scenarios shown as rows.
func gridRows(m *matrix.Matrix) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range m.Scenarios {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, c := range m.Cells {
		if !seen[c.Scenario] {
			seen[c.Scenario] = true
			out = append(out, c.Scenario)
		}
	}
	return out
}

// gridCell is what one scenario/backend square of the grid shows.
type gridCell struct {
	// Class is ok, bad, error, na (not applicable) or none (not planned).
	Class string
	// Runs are the cells of the square, one per seed.
	Runs []gridRun
	// Title is the tooltip.
	Title string
	// Text is shown when there is no run.
	Text string
}

type gridRun struct {
	Label, Href, Class, Title string
}

// cellClass is the CSS class of one cell: ok, bad or error.
func cellClass(c matrix.Cell) string {
	switch {
	case c.AsExpected:
		return "ok"
	case c.Verdict == matrix.VerdictError || c.Verdict == matrix.VerdictMissing:
		return "error"
	}
	return "bad"
}

// cellLabel is the short text of a cell in the grid: its verdict, and the
// expected one when they differ.
func cellLabel(c matrix.Cell) string {
	if c.AsExpected || c.Verdict == matrix.VerdictError || c.Verdict == matrix.VerdictMissing || c.Verdict == c.Expected {
		if !c.AsExpected && c.Verdict == c.Expected {
			return c.Verdict + "*" // the verdict matches but a checker differs
		}
		return c.Verdict
	}
	return c.Verdict + " ≠ " + c.Expected
}

// grid computes every square, rows by columns.
func grid(m *matrix.Matrix) (rows, cols []string, sq [][]gridCell) {
	if len(m.Versions) > 0 {
		return versionGrid(m)
	}
	rows, cols = gridRows(m), gridColumns(m)
	type pair struct{ s, b string }
	cells := map[pair][]matrix.Cell{}
	for _, c := range m.Cells {
		p := pair{c.Scenario, c.Backend}
		cells[p] = append(cells[p], c)
	}
	skipped := map[pair]string{}
	for _, s := range m.Skipped {
		skipped[pair{s.Scenario, s.Backend}] = s.Why
	}
	planned := map[pair]bool{}
	for _, k := range m.Planned {
		planned[pair{k.Scenario, k.Backend}] = true
	}
	sq = make([][]gridCell, len(rows))
	for i, s := range rows {
		sq[i] = make([]gridCell, len(cols))
		for j, b := range cols {
			p := pair{s, b}
			g := &sq[i][j]
			cs := cells[p]
			switch {
			case len(cs) > 0:
				fillSquare(g, cs, false)
			case skipped[p] != "":
				g.Class, g.Text, g.Title = "na", "n/a", "not applicable: "+skipped[p]
			case planned[p]:
				g.Class, g.Text, g.Title = "error", "not run", "planned, but this matrix did not run it"
			default:
				g.Class, g.Text, g.Title = "none", "—", "the scenario does not apply to this backend (its backends: list)"
			}
		}
	}
	return rows, cols, sq
}

type matrixView struct {
	Title, Started, Command, Shard string
	Shards                         []string
	Verdict, VerdictClass, Totals  string
	Rows, Cols                     []string
	Grid                           [][]gridCell
	Corner                         string
	Versions                       []matrix.Version
	Diffs                          []string
	Backends                       []backendStatView
	Cells                          []cellView
	Skipped                        []matrix.Skipped
	Seeds                          int
	Seconds                        string
	Interrupted                    bool
}

type backendStatView struct {
	Backend, Cells, AsExpected, Holds, Violations, PerThousand, Cycles string
}

type cellView struct {
	Scenario, Backend, Verdict, Expected, Result, Class, Href, Why, Time string
	Version, ServerVersions                                              string
	Shrink                                                               string
	Seed                                                                 int64
	Holds, Violations, Cycles                                            string
}

// matrixHTML renders the matrix's self-contained page: the verdict grid
// with each square linking to its runs, the comparison plot, per-backend
// numbers and every cell.
func matrixHTML(m *matrix.Matrix) ([]byte, error) {
	v := matrixView{
		Title:   "locktorture matrix " + m.Started,
		Started: m.Started, Command: m.Command, Shard: m.Shard, Shards: m.Shards,
		Totals: matrixTotals(m), Seeds: m.Seeds, Interrupted: m.Interrupted,
		Seconds: fmtDur(int64(m.Seconds * 1e9)),
		Skipped: m.Skipped,
	}
	switch {
	case m.Valid:
		v.Verdict, v.VerdictClass = "AS EXPECTED", "valid"
	case m.HasErrors():
		v.Verdict, v.VerdictClass = "HARNESS ERRORS", "unknown"
	default:
		v.Verdict, v.VerdictClass = "NOT AS EXPECTED", "invalid"
	}
	v.Rows, v.Cols, v.Grid = grid(m)
	v.Corner = "scenario \\ backend"
	if len(m.Versions) > 0 {
		v.Corner, v.Versions, v.Diffs = "scenario / backend \\ version", m.Versions, versionDiffLines(m)
	}
	for _, s := range backendStats(m) {
		v.Backends = append(v.Backends, backendStatView{
			Backend: s.Backend, Cells: thousands(s.Cells), AsExpected: thousands(s.AsExpected),
			Holds: thousands(s.BaseHolds), Violations: thousands(s.BaseViolations),
			PerThousand: baselineFigure(s.PerThousand()), Cycles: baselineFigure(s.CyclesPerSecond()),
		})
	}
	for _, c := range m.Cells {
		cv := cellView{
			Scenario: c.Scenario, Backend: c.Backend, Seed: c.Seed, Verdict: c.Verdict, Expected: c.Expected,
			Class: cellClass(c), Why: c.Why, Shrink: c.Shrink, Time: fmt.Sprintf("%.1fs", c.Seconds),
			Holds: thousands(c.Holds), Violations: thousands(c.Violations), Cycles: fmt.Sprintf("%.1f", c.HoldsPerSecond),
			Version: c.Version, ServerVersions: c.ServerVersionText(),
		}
		switch cv.Class {
		case "ok":
			cv.Result = "as expected"
		case "error":
			cv.Result = c.Verdict
		default:
			cv.Result = "NOT as expected"
		}
		if c.Dir != "" {
			cv.Href = path.Join(c.Dir, FileIndex)
		}
		v.Cells = append(v.Cells, cv)
	}
	var buf bytes.Buffer
	if err := matrixTmpl.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("render matrix page: %w", err)
	}
	return buf.Bytes(), nil
}

var matrixTmpl = template.Must(template.New("matrix").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1f2328;max-width:1800px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:26px;margin:8px 0 2px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.verdict{display:inline-block;font-size:34px;font-weight:800;letter-spacing:1px;padding:6px 22px;border-radius:8px;color:#fff;margin:8px 0}
.verdict.valid{background:#1a7f37}.verdict.invalid{background:#cf222e}.verdict.unknown{background:#bf8700}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #d0d7de;padding:3px 10px;text-align:left;vertical-align:top}th{background:#f6f8fa}
.scroll{overflow-x:auto}table.grid{font-size:13px}table.grid td,table.grid th{white-space:nowrap;padding:4px 6px}
table.grid td{text-align:center;min-width:56px}table.grid th.row{text-align:right}
table.grid td.ok{background:#2da44e}table.grid td.bad{background:#cf222e}table.grid td.error{background:#d4a72c}
table.grid td.na{background:#eaeef2;color:#57606a}table.grid td.none{background:#fff;color:#8c959f}
.run{display:block;font-weight:700;text-decoration:none;padding:1px 4px;border-radius:4px}
.run.ok,.run.bad{color:#fff}.run.error{color:#1f2328}a.run:hover{text-decoration:underline}
td.num{text-align:right}tr.ok td.res{color:#116329}tr.bad td.res{color:#a40e26;font-weight:700}tr.error td.res{color:#7d4e00;font-weight:700}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;overflow-x:auto;white-space:pre-wrap}
img{max-width:100%;border:1px solid #d0d7de;margin:6px 0}
.note{background:#fff8c5;border:1px solid #d4a72c;padding:6px 10px;border-radius:6px}
.legend span{display:inline-block;padding:1px 8px;margin-right:8px;border:1px solid #d0d7de}
code{font-family:ui-monospace,Menlo,Consolas,monospace}
</style>
</head>
<body>
<h1>Backend comparison matrix</h1>
<p>locktorture matrix <code>{{.Started}}</code>{{with .Shard}} — shard <code>{{.}}</code> of the plan{{end}}{{if .Shards}} — merged from {{len .Shards}} shards{{end}}; {{.Seeds}} seed(s) per cell; took {{.Seconds}}.</p>
<div><span class="verdict {{.VerdictClass}}">{{.Verdict}}</span></div>
<p>{{.Totals}}</p>
{{if .Interrupted}}<p class="note">The matrix was interrupted before it ran every cell.</p>{{end}}
{{if .Versions}}{{if .Diffs}}<div class="note"><b>{{len .Diffs}} scenario/backend pair(s) give a different verdict with another version:</b><ul>{{range .Diffs}}<li>{{.}}</li>{{end}}</ul></div>{{else}}<p>Every scenario/backend pair gives the same verdict with every version set.</p>{{end}}
<p>Version sets, side by side below: {{range $i, $v := .Versions}}{{if $i}}; {{end}}<b>{{$v.Name}}</b> ({{range $k, $ref := $v.Images}}{{$k}}={{$ref}} {{end}}{{with $v.RedisProgram}}redis_program: {{.}}{{end}}){{end}}. Each square names the versions its servers reported.</p>{{end}}
{{with .Command}}<p>Repeat:</p><pre><code>{{.}}</code></pre>{{end}}

<h2>Verdicts</h2>
<p class="legend"><span style="background:#2da44e;color:#fff">as expected</span><span style="background:#cf222e;color:#fff">NOT as expected (verdict ≠ expected)</span><span style="background:#d4a72c">harness error / not run</span><span style="background:#eaeef2">not applicable</span><span>— not one of the scenario's backends</span>
Each verdict links to its run's report. A * marks a run whose verdict matches but a checker's does not.</p>
<div class="scroll"><table class="grid">
<tr><th>{{.Corner}}</th>{{range .Cols}}<th>{{.}}</th>{{end}}</tr>
{{range $i, $row := .Rows}}<tr><th class="row">{{$row}}</th>{{range index $.Grid $i}}<td class="{{.Class}}" title="{{.Title}}">{{range .Runs}}{{if .Href}}<a class="run {{.Class}}" href="{{.Href}}" title="{{.Title}}">{{.Label}}</a>{{else}}<span class="run {{.Class}}" title="{{.Title}}">{{.Label}}</span>{{end}}{{else}}{{.Text}}{{end}}</td>{{end}}</tr>
{{end}}</table></div>

<h2>Comparison</h2>
<p><a href="matrix.png"><img src="matrix.png" alt="the verdict grid, and per backend its violations per 1,000 holds and lock cycles per second in the fault-free baseline"></a></p>
{{if .Backends}}<table>
<tr><th>backend</th><th>cells</th><th>as expected</th><th>baseline holds</th><th>baseline violations</th><th>violations / 1,000 holds (baseline)</th><th>lock cycles / s (baseline)</th></tr>
{{range .Backends}}<tr><td><code>{{.Backend}}</code></td><td class="num">{{.Cells}}</td><td class="num">{{.AsExpected}}</td><td class="num">{{.Holds}}</td><td class="num">{{.Violations}}</td><td class="num">{{.PerThousand}}</td><td class="num">{{.Cycles}}</td></tr>
{{end}}</table>
<p>The figures come from the fault-free <code>baseline</code> cells only, where every backend runs the same workload: violations (mutex overlaps, stale writes accepted, lost updates) per 1,000 holds, and granted holds per second of the runs' time (the stats checker). A backend with no baseline cell shows "not run", never 0. Cells under faults differ between backends and are never summed across them: to compare locks under the same faults, run <code>locktorture compare</code>.</p>{{end}}

<h2>Cells</h2>
<table>
<tr><th>scenario</th><th>backend</th>{{if .Versions}}<th>version set</th><th>servers reported</th>{{end}}<th>seed</th><th>verdict</th><th>expected</th><th>result</th><th>holds</th><th>violations</th><th>cycles/s</th><th>time</th><th>report</th></tr>
{{range .Cells}}<tr class="{{.Class}}"><td>{{.Scenario}}</td><td><code>{{.Backend}}</code></td>{{if $.Versions}}<td>{{.Version}}</td><td>{{.ServerVersions}}</td>{{end}}<td class="num">{{.Seed}}</td><td>{{.Verdict}}</td><td>{{.Expected}}</td><td class="res">{{.Result}}{{with .Why}}<br><small>{{.}}</small>{{end}}{{with .Shrink}}<br><small>shrink: <code>{{.}}</code></small>{{end}}</td><td class="num">{{.Holds}}</td><td class="num">{{.Violations}}</td><td class="num">{{.Cycles}}</td><td class="num">{{.Time}}</td><td>{{with .Href}}<a href="{{.}}">run</a>{{end}}</td></tr>
{{end}}</table>

{{if .Skipped}}<h2>Not applicable</h2>
<ul>{{range .Skipped}}<li><code>{{.Scenario}}</code> × <code>{{.Backend}}</code>{{with .Version}} @ {{.}}{{end}}: {{.Why}}</li>{{end}}</ul>{{end}}
{{if .Shards}}<h2>Shards</h2>
<ul>{{range .Shards}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}

<h2>Files</h2>
<ul><li><a href="results.json">results.json</a> — every cell, its verdict and expectation</li>
<li><a href="junit.xml">junit.xml</a> — JUnit XML for CI, one testcase per cell</li>
<li><a href="matrix.png">matrix.png</a> — the comparison picture</li></ul>
</body>
</html>
`))
