package reports

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/locktorture/locktorture/history"
)

// completed is one client op from invoke to completion.
type completed struct {
	f          string
	typ        history.Type
	invoke     int64
	completion int64
}

// completions pairs every client invoke with its completion, in completion
// order. Invokes never completed are left out.
func completions(ops []history.Op) []completed {
	pending := map[int]int64{}
	out := make([]completed, 0, len(ops)/2+1)
	for i := range ops {
		op := &ops[i]
		if op.IsNemesis() {
			continue
		}
		switch op.Type {
		case history.Invoke:
			pending[op.Process] = op.Time
			continue
		case history.OK, history.Fail, history.Info:
		default:
			continue // not an op type of the contract: nothing to draw
		}
		t0, ok := pending[op.Process]
		if !ok {
			continue
		}
		delete(pending, op.Process)
		out = append(out, completed{f: op.F, typ: op.Type, invoke: t0, completion: op.Time})
	}
	return out
}

// historySpan returns the last op's time (1s for an empty history).
func historySpan(ops []history.Op) int64 {
	var span int64
	for i := range ops {
		span = max(span, ops[i].Time)
	}
	if span <= 0 {
		span = 1e9
	}
	return span
}

// latencyPNG plots the latency of each client op against its completion
// time, log-scale, coloured by outcome, over shaded fault windows.
func latencyPNG(ops []history.Op, heading string) ([]byte, error) {
	cs := completions(ops)
	fs := faults(ops)
	span := historySpan(ops)

	// Sample down to maxPoints: every op of a rare outcome, every k-th of
	// the common ones.
	count := map[history.Type]int{}
	for _, c := range cs {
		count[c.typ]++
	}
	stride := map[history.Type]int{history.OK: 1, history.Fail: 1, history.Info: 1}
	sampled := false
	if len(cs) > maxPoints {
		budget := maxPoints
		if count[history.Info] <= maxPoints/4 {
			budget -= count[history.Info]
		} else {
			stride[history.Info] = int(math.Ceil(float64(count[history.Info]) / float64(maxPoints/4)))
			budget -= maxPoints / 4
		}
		common := count[history.OK] + count[history.Fail]
		if common > budget {
			k := int(math.Ceil(float64(common) / float64(budget)))
			stride[history.OK], stride[history.Fail] = k, k
		}
		sampled = true
	}
	type pt struct{ x, y float64 }
	pts := map[history.Type][]pt{}
	seen := map[history.Type]int{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range cs {
		seen[c.typ]++
		if (seen[c.typ]-1)%stride[c.typ] != 0 {
			continue
		}
		y := max(sec(c.completion-c.invoke), 1e-6)
		lo, hi = min(lo, y), max(hi, y)
		pts[c.typ] = append(pts[c.typ], pt{sec(c.completion), y})
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1e-4, 1
	}

	title := heading + " — latency of client ops, invoke to completion"
	if sampled {
		title += fmt.Sprintf(" (sampled: %s of %s ops drawn)", thousands(len(pts[history.OK])+len(pts[history.Fail])+len(pts[history.Info])), thousands(len(cs)))
	}
	// No y label: gonum centres it linearly, which on a log axis pads the top.
	p := newPlot(title, "seconds since start (at completion)", "")
	p.X.Min, p.X.Max = 0, sec(span)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = durTicks{}
	p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo)))
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(hi*1.05)))
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min * 10
	}
	cols := faultColourMap(fs)
	p.Add(bandsPlotter(fs, cols))

	styles := []struct {
		typ  history.Type
		name string
		col  color.Color
	}{
		{history.OK, "ok", colOK},
		{history.Fail, "fail", colFail},
		{history.Info, "info (unknown)", colInfo},
	}
	radius := vg.Points(2.5)
	switch {
	case len(cs) > 5000:
		radius = vg.Points(1.1)
	case len(cs) > 500:
		radius = vg.Points(1.6)
	}
	p.Add(plotFunc(func(c draw.Canvas, pl *plot.Plot) {
		trX, trY := pl.Transforms(&c)
		for _, s := range styles {
			sty := draw.GlyphStyle{Color: s.col, Radius: radius, Shape: draw.CircleGlyph{}}
			for _, q := range pts[s.typ] {
				c.DrawGlyph(sty, vg.Point{X: trX(q.x), Y: trY(q.y)})
			}
		}
	}))
	var leg []legendEntry
	for _, s := range styles {
		if count[s.typ] > 0 {
			leg = append(leg, legendEntry{fmt.Sprintf("%s (%s)", s.name, thousands(count[s.typ])), glyphThumb{[]draw.GlyphStyle{{Color: s.col, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}}}})
		}
	}
	leg = append(leg, faultLegend(fs, cols)...)
	return renderPNG(p, leg, 10*vg.Inch, 4*vg.Inch)
}
