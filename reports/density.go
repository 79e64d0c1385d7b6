package reports

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// fileDensity is the whole-run view of a run too long to draw op by op.
const fileDensity = "density.png"

// Density bounds.
const (
	densityBuckets = 600 // time buckets at most: the width doubles as the run goes on
	densityKeys    = 32  // keys drawn as rows; the others are counted in the totals
	densityFaults  = 5000
)

// Density is a whole run counted per time bucket, in memory bounded
// however long it runs: holds begun and overlaps begun per key (by the
// checkers' rule, seen live: see checker.Tracker), completed client ops,
// and the faults (the nemesis ops, up to a few thousand). A long run's
// report draws it (density.png, and rate.png over the whole run) beside
// the plots of a stretch of ops. Feed it every op with Add; it is not
// safe for concurrent use.
type Density struct {
	width    int64 // ns per bucket
	keys     map[string]*keyDensity
	recent   [64]*keyDensity // the keys last looked up (see key)
	order    []string        // keys in order of first op
	done     []int32         // completed client ops per bucket
	holds    []int32         // holds begun per bucket, all keys
	overlaps []int32         // overlaps begun per bucket, all keys
	nemesis  []history.Op
	tracker  checker.Tracker
	last     int64
}

// keyDensity is one key's holds and overlaps per bucket.
type keyDensity struct {
	name            string
	holds, overlaps []int32
}

// NewDensity returns an empty Density.
func NewDensity() *Density {
	return &Density{width: 1e7, keys: map[string]*keyDensity{}}
}

// Add counts one op.
func (d *Density) Add(op *history.Op) {
	d.last = max(d.last, op.Time)
	for op.Time/d.width >= densityBuckets {
		d.coarsen()
	}
	b := int(max(op.Time, 0) / d.width)
	if op.IsNemesis() {
		if len(d.nemesis) < densityFaults {
			o := *op
			o.Value = append([]byte(nil), op.Value...)
			d.nemesis = append(d.nemesis, o)
		}
		return
	}
	if op.Type != history.Invoke {
		bump(&d.done, b, 1)
	}
	k := d.key(op.Key)
	holdsBefore, _, _ := d.tracker.Totals()
	o := d.tracker.Observe(op)
	if holds, _, _ := d.tracker.Totals(); holds > holdsBefore {
		bump(&k.holds, b, 1)
		bump(&d.holds, b, 1)
	}
	if o > 0 {
		bump(&k.overlaps, b, int32(o))
		bump(&d.overlaps, b, int32(o))
	}
}

// key returns key's counts, new (and last in order) when it has none. The
// last keys looked up are kept by a hash of their last bytes, so that a
// few busy keys whose ops interleave are not looked up in the map at every
// op.
func (d *Density) key(key string) *keyDensity {
	slot := &d.recent[recentSlot(key, len(d.recent))]
	if k := *slot; k != nil && k.name == key {
		return k
	}
	k := d.keys[key]
	if k == nil {
		k = &keyDensity{name: key}
		d.keys[key] = k
		d.order = append(d.order, key)
	}
	*slot = k
	return k
}

// recentSlot is key's place in a table of n keys looked up last: a hash of
// its length and last two bytes.
func recentSlot(key string, n int) int {
	h := uint(len(key))
	if l := len(key); l > 0 {
		h = h*31 + uint(key[l-1])
		if l > 1 {
			h = h*31 + uint(key[l-2])
		}
	}
	return int(h % uint(n))
}

// bump adds n to (*s)[b], growing *s.
func bump(s *[]int32, b int, n int32) {
	if b >= len(*s) {
		*s = append(*s, make([]int32, b+1-len(*s))...)
	}
	(*s)[b] += n
}

// coarsen doubles the bucket width, merging neighbours.
func (d *Density) coarsen() {
	d.width *= 2
	half := func(s []int32) []int32 {
		for i := range s {
			if i%2 == 1 {
				s[i/2] += s[i]
			} else {
				s[i/2] = s[i]
			}
		}
		return s[:(len(s)+1)/2]
	}
	d.done, d.holds, d.overlaps = half(d.done), half(d.holds), half(d.overlaps)
	for _, k := range d.keys {
		k.holds, k.overlaps = half(k.holds), half(k.overlaps)
	}
}

// densityPNG draws the whole run: a row per key (the busiest
// densityKeys), each bucket shaded by the holds begun in it, red where
// overlaps began, faults shaded behind.
func densityPNG(d *Density, heading string) ([]byte, error) {
	keys := d.rows()
	n := len(keys)
	fs := d.faults()
	title := fmt.Sprintf("%s — the whole run: holds per key in buckets of %s, overlaps in red", heading, fmtDur(d.width))
	if len(d.keys) > n {
		title += fmt.Sprintf(" (the %d busiest of %d keys)", n, len(d.keys))
	}
	p := newPlot(title, "seconds since start", "")
	p.X.Min, p.X.Max = 0, sec(max(d.last, 1))
	p.Y.Min, p.Y.Max = -0.5, float64(max(n, 1))-0.5
	var ticks []plot.Tick
	for i, k := range keys {
		ticks = append(ticks, plot.Tick{Value: float64(n - 1 - i), Label: k})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	cols := faultColourMap(fs)
	p.Add(bandsPlotter(fs, cols), d.cells(keys))
	leg := []legendEntry{{"holds begun (darker: more)", rectThumb{colHold}}}
	if slices.ContainsFunc(d.overlaps, func(v int32) bool { return v > 0 }) {
		leg = append(leg, legendEntry{"overlaps began", rectThumb{colOverlap}})
	}
	leg = append(leg, faultLegend(fs, cols)...)
	height := min(max(vg.Inch*1.3+vg.Inch*0.3*vg.Length(n), 3*vg.Inch), 12*vg.Inch)
	return renderPNG(p, leg, 10*vg.Inch, height)
}

// faults returns the run's fault windows, those still open at the end
// reaching it.
func (d *Density) faults() []fault {
	return faults(append(slices.Clip(d.nemesis), history.Op{Time: d.last}))
}

// rows returns the keys drawn, the busiest densityKeys in name order.
func (d *Density) rows() []string {
	total := func(k string) (t int64) {
		for _, v := range d.keys[k].holds {
			t += int64(v)
		}
		return t
	}
	keys := slices.Clone(d.order)
	if len(keys) > densityKeys {
		slices.SortStableFunc(keys, func(a, b string) int { return int(total(b) - total(a)) })
		keys = keys[:densityKeys]
	}
	slices.Sort(keys)
	return keys
}

// cells draws each key's buckets.
func (d *Density) cells(keys []string) plot.Plotter {
	n := len(keys)
	var most int32 = 1
	for _, k := range keys {
		for _, v := range d.keys[k].holds {
			most = max(most, v)
		}
	}
	return plotFunc(func(c draw.Canvas, pl *plot.Plot) {
		trX, trY := pl.Transforms(&c)
		for i, k := range keys {
			y := float64(n - 1 - i)
			y0, y1 := trY(y-barHalf), trY(y+barHalf)
			kd := d.keys[k]
			for b, v := range kd.holds {
				if v == 0 {
					continue
				}
				x0, x1 := trX(sec(int64(b)*d.width)), trX(sec(int64(b+1)*d.width))
				a := uint8(40 + 215*int(v)/int(most))
				rect(&c, withAlpha(colHold, a), x0, y0, x1, y1)
			}
			for b, v := range kd.overlaps {
				if v == 0 {
					continue
				}
				x0, x1 := trX(sec(int64(b)*d.width)), trX(sec(int64(b+1)*d.width))
				if x1-x0 < vg.Points(2) {
					x1 = x0 + vg.Points(2)
				}
				rect(&c, colOverlap, x0, trY(y-overlapHalf), x1, trY(y+overlapHalf))
			}
		}
	})
}

// densityRatePNG is rate.png over the whole run: completed client ops,
// holds and overlaps begun per second, a point per bucket.
func densityRatePNG(d *Density, heading string) ([]byte, error) {
	fs := d.faults()
	p := newPlot(fmt.Sprintf("%s — the whole run per second (buckets of %s)", heading, fmtDur(d.width)), "seconds since start", "per second")
	cols := faultColourMap(fs)
	p.Add(bandsPlotter(fs, cols))
	w := sec(d.width)
	var leg []legendEntry
	ymax := 1.0
	for _, s := range []struct {
		name string
		v    []int32
		col  color.RGBA
	}{{"completed client ops", d.done, colHold}, {"holds begun", d.holds, color.RGBA{R: 90, G: 90, B: 90, A: 255}}, {"overlaps begun", d.overlaps, colOverlap}} {
		if len(s.v) == 0 {
			continue
		}
		xys := make(plotter.XYs, 0, len(s.v)+1)
		for b, v := range s.v {
			xys = append(xys, plotter.XY{X: float64(b) * w, Y: float64(v) / w})
			ymax = max(ymax, float64(v)/w)
		}
		xys = append(xys, plotter.XY{X: float64(len(s.v)) * w, Y: xys[len(xys)-1].Y})
		ln, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("rate line %s: %w", s.name, err)
		}
		ln.StepStyle = plotter.PostStep
		ln.LineStyle = draw.LineStyle{Color: s.col, Width: vg.Points(1.2)}
		p.Add(ln)
		leg = append(leg, legendEntry{s.name, lineThumb{ln.LineStyle}})
	}
	p.X.Min, p.X.Max = 0, sec(max(d.last, 1))
	p.Y.Min, p.Y.Max = 0, ymax*1.08
	leg = append(leg, faultLegend(fs, cols)...)
	return renderPNG(p, leg, 10*vg.Inch, 4*vg.Inch)
}
