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

// outcomes are the completion types the latency plot draws, in its order.
var outcomes = [...]history.Type{history.OK, history.Fail, history.Info}

// completed is one client op from invoke to completion: 24 bytes, for a
// million-op history has half a million of them.
type completed struct {
	invoke, completion int64
	outcome            int // an index into outcomes
}

// completions pairs every client invoke with its completion, in completion
// order. Invokes never completed are left out.
func completions(ops []history.Op) []completed {
	type invoked struct {
		at int64
		ok bool
	}
	var small []invoked // by process, for the usual small process numbers
	big := map[int]int64{}
	out := make([]completed, 0, len(ops)/2+1)
	for i := range ops {
		op := &ops[i]
		if op.IsNemesis() {
			continue
		}
		p := op.Process
		var oc int
		switch op.Type {
		case history.Invoke:
			if p >= 0 && p < 1<<16 {
				if p >= len(small) {
					small = append(small, make([]invoked, p+1-len(small))...)
				}
				small[p] = invoked{op.Time, true}
			} else {
				big[p] = op.Time
			}
			continue
		case history.OK:
			oc = 0
		case history.Fail:
			oc = 1
		case history.Info:
			oc = 2
		default:
			continue // not an op type of the contract: nothing to draw
		}
		var t0 int64
		if p >= 0 && p < 1<<16 {
			if p >= len(small) || !small[p].ok {
				continue
			}
			t0, small[p] = small[p].at, invoked{}
		} else {
			at, ok := big[p]
			if !ok {
				continue
			}
			t0 = at
			delete(big, p)
		}
		out = append(out, completed{invoke: t0, completion: op.Time, outcome: oc})
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
	const ok, fail, info = 0, 1, 2 // indexes into outcomes
	var count [len(outcomes)]int
	for _, c := range cs {
		count[c.outcome]++
	}
	stride := [len(outcomes)]int{1, 1, 1}
	sampled := false
	if len(cs) > maxPoints {
		budget := maxPoints
		if count[info] <= maxPoints/4 {
			budget -= count[info]
		} else {
			stride[info] = int(math.Ceil(float64(count[info]) / float64(maxPoints/4)))
			budget -= maxPoints / 4
		}
		common := count[ok] + count[fail]
		if common > budget {
			k := int(math.Ceil(float64(common) / float64(budget)))
			stride[ok], stride[fail] = k, k
		}
		sampled = true
	}
	type pt struct{ x, y float64 }
	var pts [len(outcomes)][]pt
	var seen [len(outcomes)]int
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range cs {
		seen[c.outcome]++
		if (seen[c.outcome]-1)%stride[c.outcome] != 0 {
			continue
		}
		y := max(sec(c.completion-c.invoke), 1e-6)
		lo, hi = min(lo, y), max(hi, y)
		pts[c.outcome] = append(pts[c.outcome], pt{sec(c.completion), y})
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1e-4, 1
	}

	title := heading + " — latency of client ops, invoke to completion"
	if sampled {
		title += fmt.Sprintf(" (sampled: %s of %s ops drawn)", thousands(len(pts[ok])+len(pts[fail])+len(pts[info])), thousands(len(cs)))
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

	styles := [len(outcomes)]struct { // by outcome
		name string
		col  color.Color
	}{
		ok:   {"ok", colOK},
		fail: {"fail", colFail},
		info: {"info (unknown)", colInfo},
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
		for i, s := range styles {
			sty := draw.GlyphStyle{Color: s.col, Radius: radius, Shape: draw.CircleGlyph{}}
			for _, q := range pts[i] {
				c.DrawGlyph(sty, vg.Point{X: trX(q.x), Y: trY(q.y)})
			}
		}
	}))
	var leg []legendEntry
	for i, s := range styles {
		if count[i] > 0 {
			leg = append(leg, legendEntry{fmt.Sprintf("%s (%s)", s.name, thousands(count[i])), glyphThumb{[]draw.GlyphStyle{{Color: s.col, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}}}})
		}
	}
	leg = append(leg, faultLegend(fs, cols)...)
	return renderPNG(p, leg, 10*vg.Inch, 4*vg.Inch)
}
