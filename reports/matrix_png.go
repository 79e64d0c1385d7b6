package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strings"

	"github.com/locktorture/locktorture/matrix"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colours of the grid squares: strong green and red, to see at a glance.
var (
	colSqOK    = color.RGBA{R: 45, G: 164, B: 78, A: 255}
	colSqBad   = color.RGBA{R: 207, G: 34, B: 46, A: 255}
	colSqError = color.RGBA{R: 212, G: 167, B: 44, A: 255}
	colSqNA    = color.RGBA{R: 234, G: 238, B: 242, A: 255}
	colSqNone  = color.RGBA{R: 255, G: 255, B: 255, A: 255}
	colTxtNA   = color.RGBA{R: 87, G: 96, B: 106, A: 255}
	colBorder  = color.RGBA{R: 208, G: 215, B: 222, A: 255}
	colBarViol = color.RGBA{R: 215, G: 25, B: 28, A: 255}
	colBarRate = color.RGBA{R: 49, G: 110, B: 180, A: 255}
)

func squareColours(class string) (fill, txt color.RGBA) {
	white := color.RGBA{R: 255, G: 255, B: 255, A: 255}
	switch class {
	case "ok":
		return colSqOK, white
	case "bad":
		return colSqBad, white
	case "error":
		return colSqError, color.RGBA{A: 255}
	case "na":
		return colSqNA, colTxtNA
	}
	return colSqNone, colTxtNA
}

// squareText is what a grid square of the picture says: the single run's
// label, or for several seeds how many came out as expected.
func squareText(g gridCell) string {
	switch len(g.Runs) {
	case 0:
		return g.Text
	case 1:
		return g.Runs[0].Label
	}
	ok := 0
	for _, r := range g.Runs {
		if r.Class == "ok" {
			ok++
		}
	}
	return fmt.Sprintf("%d/%d as expected", ok, len(g.Runs))
}

// matrixPNG draws the verdict grid (green as expected, red not), then two
// bar charts per backend from its fault-free baseline cells: safety
// violations per 1,000 holds and lock cycles per second (a backend without
// a baseline cell has no bar).
func matrixPNG(m *matrix.Matrix) ([]byte, error) {
	rows, cols, sq := grid(m)
	stats := backendStats(m)

	hdr := textStyle(9, color.Black)
	hdr.Font.Weight = 700
	cellSty := textStyle(8.5, color.Black)
	cellSty.Font.Weight = 700
	cellSty.XAlign, cellSty.YAlign = text.XCenter, text.YCenter
	titleSty := textStyle(13, color.Black)
	titleSty.Font.Weight = 700
	noteSty := textStyle(9, colTxtNA)

	labelW := vg.Points(90)
	for _, r := range rows {
		labelW = max(labelW, hdr.Width(r)+vg.Points(14))
	}
	colW := vg.Points(70)
	for _, c := range cols {
		colW = max(colW, hdr.Width(c)+vg.Points(10))
	}
	for _, row := range sq {
		for _, g := range row {
			colW = max(colW, cellSty.Width(squareText(g))+vg.Points(10))
		}
	}
	const (
		margin = vg.Length(14)
		rowH   = vg.Length(20)
		headH  = vg.Length(22)
		titleH = vg.Length(30)
		noteH  = vg.Length(18)
	)
	gridW := labelW + colW*vg.Length(len(cols))
	width := max(gridW+2*margin, 10*vg.Inch)
	gridH := headH + rowH*vg.Length(max(len(rows), 1))
	barsH := vg.Length(0)
	if len(stats) > 0 {
		barsH = max(vg.Points(160), vg.Points(18)*vg.Length(len(stats))+vg.Points(70))
	}
	diffs := versionDiffLines(m)
	diffH := vg.Length(0)
	if len(m.Versions) > 0 {
		diffH = noteH * vg.Length(1+min(len(diffs), maxDiffLines))
	}
	height := titleH + diffH + gridH + noteH + barsH + 2*margin

	img := vgimg.New(width, height)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	top := dc.Max.Y - margin

	ok, differ, errs, missing := m.Counts()
	title := fmt.Sprintf("locktorture matrix %s — %d of %d cells as expected", m.Started, ok, len(m.Cells))
	if bad := differ + errs + missing; bad > 0 {
		title += fmt.Sprintf(", %d not", bad)
	}
	titleSty.YAlign = text.YTop
	dc.FillText(titleSty, vg.Point{X: dc.Min.X + margin, Y: top}, title)
	top -= titleH
	if len(m.Versions) > 0 {
		top = drawVersionDiffs(&dc, dc.Min.X+margin, top, noteH, diffs)
	}

	// The grid.
	x0 := dc.Min.X + margin
	hdrC := hdr
	hdrC.XAlign, hdrC.YAlign = text.XCenter, text.YCenter
	for j, c := range cols {
		cx := x0 + labelW + colW*vg.Length(j) + colW/2
		dc.FillText(hdrC, vg.Point{X: cx, Y: top - headH/2}, c)
	}
	hdrR := hdr
	hdrR.XAlign, hdrR.YAlign = text.XRight, text.YCenter
	line := draw.LineStyle{Color: colBorder, Width: vg.Points(0.8)}
	for i, r := range rows {
		y1 := top - headH - rowH*vg.Length(i)
		y0 := y1 - rowH
		dc.FillText(hdrR, vg.Point{X: x0 + labelW - vg.Points(7), Y: (y0 + y1) / 2}, r)
		for j := range cols {
			g := sq[i][j]
			fill, txt := squareColours(g.Class)
			cx0 := x0 + labelW + colW*vg.Length(j)
			rect(&dc, fill, cx0, y0, cx0+colW, y1)
			s := cellSty
			s.Color = txt
			if len(g.Runs) == 0 {
				s.Font.Weight = 400
			}
			dc.FillText(s, vg.Point{X: cx0 + colW/2, Y: (y0 + y1) / 2}, squareText(g))
		}
	}
	// Grid lines.
	gy1 := top - headH
	gy0 := gy1 - rowH*vg.Length(len(rows))
	for i := 0; i <= len(rows); i++ {
		y := gy1 - rowH*vg.Length(i)
		dc.StrokeLine2(line, x0+labelW, y, x0+labelW+colW*vg.Length(len(cols)), y)
	}
	for j := 0; j <= len(cols); j++ {
		x := x0 + labelW + colW*vg.Length(j)
		dc.StrokeLine2(line, x, gy0, x, gy1)
	}
	top = gy0 - vg.Points(4)
	noteSty.YAlign = text.YTop
	note := "green: as expected · red: NOT as expected (verdict ≠ expected) · yellow: harness error or not run · grey: not applicable · —: not one of the scenario's backends"
	if len(rows) == 0 || len(cols) == 0 {
		note = "no cells"
	}
	dc.FillText(noteSty, vg.Point{X: x0, Y: top}, note)
	top -= noteH

	// The bars, side by side: baseline cells only, like with like.
	if len(stats) > 0 {
		var names, rateNames []string
		var viol, rate []float64
		for _, s := range stats {
			if v, ok := s.PerThousand(); ok {
				names, viol = append(names, s.Backend), append(viol, v)
			}
			if v, ok := s.CyclesPerSecond(); ok {
				rateNames, rate = append(rateNames, s.Backend), append(rate, v)
			}
		}
		half := (width - 2*margin) / 2
		area := draw.Crop(dc, margin, -(width - margin - half), margin, -(dc.Max.Y - top))
		barPlot("safety violations per 1,000 holds (baseline cells: no faults)", names, viol, colBarViol, "%.1f").Draw(area)
		area = draw.Crop(dc, margin+half, -margin, margin, -(dc.Max.Y - top))
		barPlot("lock cycles per second (baseline cells: no faults)", rateNames, rate, colBarRate, "%.1f").Draw(area)
	}

	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encode png: %w", err)
	}
	return buf.Bytes(), nil
}

// barPlot is a horizontal bar chart, one bar per name (the first on top),
// each labelled with its value. When one bar dwarfs the rest (the mutex
// negative control does), the axis stops short of it and its bar is drawn
// broken, so the others stay readable.
func barPlot(title string, names []string, vals []float64, col color.Color, format string) *plot.Plot {
	p := newPlot(title, "", "")
	p.Title.TextStyle.Font.Size = 10
	p.X.Tick.Marker = plot.DefaultTicks{}
	n := len(names)
	var ticks []plot.Tick
	for i, nm := range names {
		ticks = append(ticks, plot.Tick{Value: float64(n - 1 - i), Label: nm})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	hi, hi2 := 0.0, 0.0 // the largest value and the one below it
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		switch {
		case v > hi:
			hi, hi2 = v, hi
		case v > hi2:
			hi2 = v
		}
	}
	top := hi
	if hi2 > 0 && hi > 5*hi2 {
		top = hi2 * 1.6
	}
	if top == 0 {
		top = 1
	}
	p.X.Min, p.X.Max = 0, top*1.18
	lbl := textStyle(8, color.Black)
	lbl.YAlign = text.YCenter
	p.Add(plotFunc(func(c draw.Canvas, pl *plot.Plot) {
		trX, trY := pl.Transforms(&c)
		for i, v := range vals {
			y := float64(n - 1 - i)
			broken := v > top*1.18
			x1 := trX(min(v, top*1.12))
			if v > 0 && x1-trX(0) < vg.Points(1) {
				x1 = trX(0) + vg.Points(1)
			}
			y0, y1 := trY(y-0.32), trY(y+0.32)
			rect(&c, col, trX(0), y0, x1, y1)
			txt := strings.TrimSpace(fmt.Sprintf(format, v))
			if broken {
				// A white gap across the bar says it goes on.
				xb := trX(top * 0.9)
				gap := vg.Points(3)
				c.FillPolygon(color.White, []vg.Point{{X: xb, Y: y0 - 1}, {X: xb + gap, Y: y0 - 1}, {X: xb + gap + gap, Y: y1 + 1}, {X: xb + gap, Y: y1 + 1}})
				in := lbl
				in.Color, in.XAlign = color.White, text.XRight
				in.Font.Weight = 700
				c.FillText(in, vg.Point{X: xb - vg.Points(3), Y: trY(y)}, txt+" (bar cut)")
				continue
			}
			c.FillText(lbl, vg.Point{X: x1 + vg.Points(3), Y: trY(y)}, txt)
		}
	}))
	return p
}

// maxDiffLines is how many differing pairs the picture lists.
const maxDiffLines = 8

// drawVersionDiffs writes, under the title, the pairs whose verdicts differ
// between version sets (or that none does); it returns the new top.
func drawVersionDiffs(dc *draw.Canvas, x, top, lineH vg.Length, diffs []string) vg.Length {
	sty := textStyle(9.5, colSqBad)
	sty.Font.Weight = 700
	sty.YAlign = text.YTop
	if len(diffs) == 0 {
		sty.Color = colSqOK
		dc.FillText(sty, vg.Point{X: x, Y: top}, "every scenario/backend pair gives the same verdict with every version set")
		return top - lineH
	}
	dc.FillText(sty, vg.Point{X: x, Y: top}, fmt.Sprintf("%d scenario/backend pair(s) give a different verdict with another version:", len(diffs)))
	top -= lineH
	sty.Font.Weight = 400
	for i, d := range diffs {
		if i == maxDiffLines {
			break
		}
		if i == maxDiffLines-1 && len(diffs) > maxDiffLines {
			d = fmt.Sprintf("... and %d more (index.html lists them)", len(diffs)-i)
		}
		dc.FillText(sty, vg.Point{X: x + 10, Y: top}, d)
		top -= lineH
	}
	return top
}
