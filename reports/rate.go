package reports

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/locktorture/locktorture/history"
)

// rateFs are the client ops the rate plot draws, in legend order, with
// their colours; the outcome sets the dash.
var rateFs = []struct {
	f   string
	col color.RGBA
}{
	{history.Acquire, color.RGBA{R: 44, G: 160, B: 44, A: 255}},
	{history.Release, color.RGBA{R: 31, G: 119, B: 180, A: 255}},
	{history.Extend, color.RGBA{R: 170, G: 170, B: 20, A: 255}},
	{history.Read, color.RGBA{R: 23, G: 170, B: 190, A: 255}},
	{history.Write, color.RGBA{R: 40, G: 40, B: 40, A: 255}},
}

var rateTypes = []struct {
	typ    history.Type
	dashes []vg.Length
	width  vg.Length
}{
	{history.OK, nil, vg.Points(1.4)},
	{history.Fail, []vg.Length{vg.Points(5), vg.Points(3)}, vg.Points(1.4)},
	{history.Info, []vg.Length{vg.Points(1.5), vg.Points(2)}, vg.Points(2)},
}

// binWidth picks a round bin width giving at most about target bins.
func binWidth(span int64, target int) float64 {
	s := sec(span) / float64(target)
	for _, w := range []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600} {
		if w >= s {
			return w
		}
	}
	return math.Ceil(s/3600) * 3600
}

// ratePNG plots completed client ops per second in time bins, one line per
// op and outcome, over shaded fault windows.
func ratePNG(ops []history.Op, heading string) ([]byte, error) {
	span := historySpan(ops)
	fs := faults(ops)
	done := 0
	for i := range ops {
		if !ops[i].IsNemesis() && ops[i].Type != history.Invoke {
			done++
		}
	}
	w := binWidth(span, min(max(done/10, 20), 150))
	nb := int(math.Ceil(sec(span)/w)) + 1
	type sk struct {
		f   string
		typ history.Type
	}
	bins := map[sk][]float64{}
	totals := map[sk]int{}
	for i := range ops {
		op := &ops[i]
		if op.IsNemesis() || op.Type == history.Invoke {
			continue
		}
		k := sk{op.F, op.Type}
		b := bins[k]
		if b == nil {
			b = make([]float64, nb)
			bins[k] = b
		}
		// An op stamped before 0 (a history that breaks its contract)
		// counts in the first bin.
		j := min(max(int(sec(op.Time)/w), 0), nb-1)
		b[j]++
		totals[k]++
	}

	p := newPlot(fmt.Sprintf("%s — completed ops per second (bins of %gs)", heading, w), "seconds since start", "ops/s")
	p.X.Min, p.X.Max = 0, sec(span)
	p.Y.Min = 0
	cols := faultColourMap(fs)
	p.Add(bandsPlotter(fs, cols))
	var leg []legendEntry
	ymax := 1.0
	for _, f := range rateFs {
		for _, t := range rateTypes {
			k := sk{f.f, t.typ}
			b := bins[k]
			if b == nil {
				continue
			}
			xys := make(plotter.XYs, 0, nb+1)
			for j, v := range b {
				// The last bin may be cut short by the end of the run.
				bw := min(w, sec(span)-float64(j)*w)
				if bw < w/4 {
					bw = w
				}
				xys = append(xys, plotter.XY{X: float64(j) * w, Y: v / bw})
				ymax = max(ymax, v/bw)
			}
			xys = append(xys, plotter.XY{X: float64(nb) * w, Y: xys[len(xys)-1].Y})
			ln, err := plotter.NewLine(xys)
			if err != nil {
				return nil, fmt.Errorf("rate line %s %s: %w", f.f, t.typ, err)
			}
			ln.StepStyle = plotter.PostStep
			ln.LineStyle = draw.LineStyle{Color: f.col, Width: t.width, Dashes: t.dashes}
			p.Add(ln)
			leg = append(leg, legendEntry{fmt.Sprintf("%s %s (%s)", f.f, t.typ, thousands(totals[k])), lineThumb{ln.LineStyle}})
		}
	}
	p.X.Min, p.X.Max = 0, sec(span)
	p.Y.Min, p.Y.Max = 0, ymax*1.08
	leg = append(leg, faultLegend(fs, cols)...)
	return renderPNG(p, leg, 10*vg.Inch, 4*vg.Inch)
}
