package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"strings"

	"github.com/locktorture/locktorture/matrix"

	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colours of a comparison's cells, by safety class.
var compareColours = map[string]struct{ fill, txt color.RGBA }{
	classSafe:    {color.RGBA{R: 45, G: 164, B: 78, A: 255}, color.RGBA{R: 255, G: 255, B: 255, A: 255}},
	classFenced:  {color.RGBA{R: 49, G: 110, B: 180, A: 255}, color.RGBA{R: 255, G: 255, B: 255, A: 255}},
	classUnsafe:  {color.RGBA{R: 207, G: 34, B: 46, A: 255}, color.RGBA{R: 255, G: 255, B: 255, A: 255}},
	classUnknown: {color.RGBA{R: 212, G: 167, B: 44, A: 255}, color.RGBA{R: 0, G: 0, B: 0, A: 255}},
	classError:   {color.RGBA{R: 212, G: 167, B: 44, A: 255}, color.RGBA{R: 0, G: 0, B: 0, A: 255}},
	classNotRun:  {color.RGBA{R: 234, G: 238, B: 242, A: 255}, color.RGBA{R: 87, G: 96, B: 106, A: 255}},
	classMissing: {color.RGBA{R: 207, G: 34, B: 46, A: 255}, color.RGBA{R: 255, G: 255, B: 255, A: 255}},
}

func cssColour(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

var compareTemplate = template.Must(template.New("compare").Funcs(template.FuncMap{
	"trimNotRun": func(s string) string { return strings.TrimPrefix(s, "not run: ") },
	"fill":       func(class string) template.CSS { return template.CSS(cssColour(compareColours[class].fill)) },
	"ink":        func(class string) template.CSS { return template.CSS(cssColour(compareColours[class].txt)) },
	"speed": func(r compareRow) []string {
		a, b, c := r.speedText()
		return []string{a, b, c}
	},
	"expected": func(c compareCell) string {
		ok, n := c.Expected()
		if n == 0 {
			return ""
		}
		if ok == n {
			return fmt.Sprintf("as expected (%d/%d)", ok, n)
		}
		return fmt.Sprintf("NOT as expected (%d of %d runs differ)%s", n-ok, n, c.knownText())
	},
}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>locktorture compare {{.M.Started}}</title>
<style>
body{font-family:sans-serif;margin:20px;color:#1f2328}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #d0d7de;padding:5px 7px;vertical-align:top}
th{background:#f6f8fa}
td.cell{min-width:120px}
td.cell a{color:inherit}
.small{font-size:11px;opacity:.9}
.bad{font-weight:bold;text-decoration:underline}
</style></head><body>
<h1>Choosing a lock: {{len .C.Rows}} rows × {{len .C.Families}} fault families</h1>
<p>{{.Totals}}</p>
<p>Each cell sums the seeds of one backend under one fault (like with like; nothing is averaged across backends or faults).
Green: safe. Blue: stale holders, every stale write rejected by fencing. Red: unsafe (stale holders, double grants, lost updates, stale writes accepted).
Grey: not run (hover for the reason). Yellow: unknown or a harness error.
"Either verdict expected": the lock's own claim leaves the outcome open, so a valid run and an invalid one are both as expected (the reason is in the cell).
Speed: lock cycles per second and acquire latency (p50/p99) with no faults (the baseline scenario, its first seed).
Recovery: median time from the fault's end to the next grant (a lock its holder could not release stays taken until it expires).</p>
<table><tr><th>backend</th><th>cycles/s</th><th>acquire p50</th><th>acquire p99</th>{{range .C.Families}}<th>{{.}}</th>{{end}}<th>as expected</th></tr>
{{range .C.Rows}}{{$row := .}}<tr><th>{{.Label}}{{with .LibraryText}}<div class="small">{{.}}</div>{{end}}</th>{{range speed .}}<td>{{.}}</td>{{end}}
{{range .Cells}}<td class="cell" style="background:{{fill .Class}};color:{{ink .Class}}"{{if .NotRun}} title="{{.NotRun}}"{{end}}>{{.Summary}}{{with .RecoveryText}}<div class="small">{{.}}</div>{{end}}{{if .Runs}}<div class="small">runs:{{range .Runs}} {{if .Dir}}<a href="{{.Dir}}/index.html">{{.Seed}}</a>{{else}}{{.Seed}}{{end}}{{end}}</div><div class="small">{{expected .}}</div>{{with .EitherWhy}}<div class="small" title="{{.}}">either verdict expected: {{.}}</div>{{end}}{{end}}{{if .NotRun}}<div class="small">{{trimNotRun .NotRun}}</div>{{end}}</td>{{end}}
<td>{{.ExpectedText}}</td></tr>
{{end}}</table>
<p><a href="index.html">the matrix (every run, its verdict and expectation)</a> · <a href="compare.png">compare.png</a> · <a href="compare.txt">compare.txt</a></p>
<p class="small">{{.M.Command}}</p>
</body></html>
`))

func compareHTML(m *matrix.Matrix) ([]byte, error) {
	var buf bytes.Buffer
	err := compareTemplate.Execute(&buf, struct {
		M      *matrix.Matrix
		C      comparison
		Totals string
	}{m, buildComparison(m), matrixTotals(m)})
	return buf.Bytes(), err
}

// comparePNG draws the comparison table: the same rows, columns, words
// and colours as compare.html.
func comparePNG(m *matrix.Matrix) ([]byte, error) {
	cmp := buildComparison(m)
	hdr := textStyle(9, color.Black)
	hdr.Font.Weight = 700
	cellSty := textStyle(8, color.Black)
	titleSty := textStyle(13, color.Black)
	titleSty.Font.Weight = 700
	titleSty.YAlign = text.YTop
	noteSty := textStyle(8.5, colTxtNA)
	noteSty.YAlign = text.YTop

	heads := []string{"backend", "cycles/s", "p50", "p99"}
	heads = append(heads, cmp.Families...)
	heads = append(heads, "as expected")
	// Each cell is up to three lines: what happened, recovery, expected.
	lines := func(r compareRow, j int) ([]string, string) {
		switch {
		case j == 0:
			if r.Library != nil && r.Fencing == "" {
				return []string{r.Label(), r.Library.Language + " " + r.Library.Version}, ""
			}
			return []string{r.Label()}, ""
		case j <= 3:
			s := r.speedText
			a, b, c := s()
			return []string{[]string{a, b, c}[j-1]}, ""
		case j == len(heads)-1:
			return []string{r.ExpectedText()}, ""
		}
		c := r.Cells[j-4]
		out := wrapWords(c.Summary(), 26)
		if rt := c.RecoveryText(); rt != "" {
			out = append(out, rt)
		}
		if c.EitherWhy() != "" {
			out = append(out, "either verdict expected")
		}
		if ok, n := c.Expected(); n > 0 && ok < n {
			out = append(out, fmt.Sprintf("NOT as expected: %d/%d", n-ok, n))
			if k := c.Known(); len(k) > 0 {
				out = append(out, wrapWords("known finding "+strings.Join(k, ", "), 30)...)
			}
		}
		if c.NotRun != "" {
			out = append(out, wrapWords(strings.TrimPrefix(c.NotRun, "not run: "), 30)...)
		}
		return out, c.Class()
	}
	colW := make([]vg.Length, len(heads))
	for j, h := range heads {
		colW[j] = hdr.Width(h) + vg.Points(10)
	}
	// Each row is as tall as its tallest cell.
	rowLines := make([]int, len(cmp.Rows))
	for i, r := range cmp.Rows {
		rowLines[i] = 1
		for j := range heads {
			ls, _ := lines(r, j)
			rowLines[i] = max(rowLines[i], len(ls))
			for _, l := range ls {
				sty := cellSty
				if j == 0 {
					sty = hdr
				}
				colW[j] = max(colW[j], sty.Width(l)+vg.Points(12))
			}
		}
	}
	const margin, headH, titleH, noteH = vg.Length(14), vg.Length(20), vg.Length(28), vg.Length(44)
	rowH := func(i int) vg.Length { return vg.Points(11)*vg.Length(rowLines[i]) + vg.Points(6) }
	var rowsH vg.Length
	for i := range cmp.Rows {
		rowsH += rowH(i)
	}
	var gridW vg.Length
	for _, w := range colW {
		gridW += w
	}
	title := fmt.Sprintf("locktorture compare %s — %s", m.Started, oneLine(matrixTotals(m)))
	notes := []string{
		"green: safe · blue: stale holders, every stale write rejected by fencing · red: unsafe · grey: not run (reason in compare.html) · yellow: unknown or harness error",
		"each cell sums the seeds of one backend under one fault; speed: the no-fault baseline; recovery: median time from the fault's end to the next grant",
	}
	width := max(gridW, titleSty.Width(title), noteSty.Width(notes[0]), noteSty.Width(notes[1])) + 2*margin
	height := titleH + headH + rowsH + noteH + 2*margin
	img := vgimg.New(width, height)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	top := dc.Max.Y - margin
	x0 := dc.Min.X + margin
	dc.FillText(titleSty, vg.Point{X: x0, Y: top}, title)
	top -= titleH
	line := draw.LineStyle{Color: colBorder, Width: vg.Points(0.8)}
	x := x0
	hdrC := hdr
	hdrC.YAlign = text.YCenter
	for j, h := range heads {
		dc.FillText(hdrC, vg.Point{X: x + vg.Points(5), Y: top - headH/2}, h)
		x += colW[j]
	}
	top -= headH
	for i, r := range cmp.Rows {
		y1 := top
		y0 := y1 - rowH(i)
		top = y0
		x := x0
		for j := range heads {
			ls, class := lines(r, j)
			sty := cellSty
			if j == 0 {
				sty = hdr
			}
			if class != "" {
				col := compareColours[class]
				rect(&dc, col.fill, x, y0, x+colW[j], y1)
				sty.Color = col.txt
			}
			sty.YAlign = text.YTop
			for k, l := range ls {
				dc.FillText(sty, vg.Point{X: x + vg.Points(5), Y: y1 - vg.Points(3) - vg.Points(11)*vg.Length(k)}, l)
			}
			dc.StrokeLine2(line, x, y0, x+colW[j], y0)
			dc.StrokeLine2(line, x, y0, x, y1)
			x += colW[j]
		}
		dc.StrokeLine2(line, x, y0, x, y1)
	}
	gy := top - vg.Points(6)
	for k, n := range notes {
		dc.FillText(noteSty, vg.Point{X: x0, Y: gy - vg.Points(12)*vg.Length(k)}, n)
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encode png: %w", err)
	}
	return buf.Bytes(), nil
}

// wrapWords breaks s into lines of at most n characters, at spaces.
func wrapWords(s string, n int) []string {
	var out []string
	cur := ""
	for _, w := range strings.Fields(s) {
		if cur != "" && len(cur)+1+len(w) > n {
			out = append(out, cur)
			cur = w
			continue
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}
