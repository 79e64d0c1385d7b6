package reports

import (
	"cmp"
	"fmt"
	"image/color"
	"slices"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// Timeline geometry, in row units (one row per process, rows 1 apart).
const (
	barHalf     = 0.26 // half the height of a hold bar
	overlapHalf = 0.34 // half the height of an overlap mark
	labelHolds  = 60   // fence tokens are written on bars below this many holds
)

// bar is one drawn span of a row: a hold, or several tiny holds merged.
type bar struct {
	start, end int64
	key        string
	fence      *int64
	leaseEnd   *int64
	n          int
}

// marker is a symbol drawn at a point of a row: a rejected or an accepted
// stale write.
type marker int

const (
	markRejected marker = iota // the fence did its job: a dark green X
	markStale                  // a stale write got through: a black triangle
)

func (m marker) draw(c *draw.Canvas, pt vg.Point) {
	r := vg.Points(5)
	halo := draw.LineStyle{Color: color.White, Width: vg.Points(5)}
	switch m {
	case markRejected:
		ln := draw.LineStyle{Color: colRejected, Width: vg.Points(2.2)}
		for _, s := range []draw.LineStyle{halo, ln} {
			c.StrokeLine2(s, pt.X-r, pt.Y-r, pt.X+r, pt.Y+r)
			c.StrokeLine2(s, pt.X-r, pt.Y+r, pt.X+r, pt.Y-r)
		}
	case markStale:
		tri := func(r vg.Length) []vg.Point {
			return []vg.Point{{X: pt.X - r, Y: pt.Y - r*0.8}, {X: pt.X + r, Y: pt.Y - r*0.8}, {X: pt.X, Y: pt.Y + r}}
		}
		c.FillPolygon(color.White, tri(r+vg.Points(2.5)))
		c.FillPolygon(colStale, tri(r))
	}
}

func (m marker) Thumbnail(c *draw.Canvas) { m.draw(c, c.Center()) }

// timelineData is everything the timeline draws, computed from the history.
type timelineData struct {
	procs     []int       // client processes, top row first
	row       map[int]int // process -> y value
	from      int64       // first op time (0, unless the ops are a stretch of a longer history)
	span      int64       // last op time
	bars      [][]bar     // per row index (same order as procs)
	holds     int
	nbars     int
	merged    bool
	keys      []string
	pastLease bool
	mixedKeys bool // some bars merge holds of several keys
	faults    []fault
	overlaps  []checker.Overlap
	rejected  []checker.Rejection
	stale     []checker.StaleWrite
}

// placeRows finds the time span and the processes the timeline shows —
// the clients, those a fault names, those in a violation — and gives each
// its row (p0 on top); it takes the violations to mark from res.
func (d *timelineData) placeRows(ops []history.Op, res *checker.Results) {
	seen := map[int]bool{}
	if len(ops) > 0 && ops[0].Index > 0 {
		d.from = ops[0].Time
	}
	for i := range ops {
		op := &ops[i]
		if op.Time > d.span {
			d.span = op.Time
		}
		if !op.IsNemesis() && !seen[op.Process] {
			seen[op.Process] = true
			d.procs = append(d.procs, op.Process)
		}
	}
	d.faults = faults(ops)
	for _, f := range d.faults {
		for _, p := range f.Processes {
			if !seen[p] {
				seen[p] = true
				d.procs = append(d.procs, p)
			}
		}
	}
	if res != nil {
		if m := res.Checkers.Mutex; m != nil {
			d.overlaps = m.Violations
		}
		if f := res.Checkers.Fencing; f != nil {
			d.rejected = f.Rejections
			d.stale = f.Violations
		}
	}
	for _, o := range d.overlaps {
		for _, p := range []int{o.Earlier.Process, o.Later.Process} {
			if !seen[p] {
				seen[p] = true
				d.procs = append(d.procs, p)
			}
		}
	}
	sort.Ints(d.procs)
	n := len(d.procs)
	for i, p := range d.procs {
		d.row[p] = n - 1 - i // p0 on top
	}
	if d.span <= 0 {
		d.span = 1e9
	}
}

func buildTimeline(ops []history.Op, res *checker.Results, plotWidthPx float64) *timelineData {
	d := &timelineData{row: map[int]int{}}
	d.placeRows(ops, res)
	n := len(d.procs)

	holds := checker.Holds(ops)
	d.holds = len(holds)
	keySet := map[string]bool{}
	// Each row's holds, as indexes into holds, in start order.
	perRow := make([][]int32, n)
	rowOf := make(map[int]int, n)
	for i, p := range d.procs {
		rowOf[p] = i
	}
	for j := range holds {
		h := &holds[j]
		keySet[h.Key] = true
		i, ok := rowOf[h.Process]
		if !ok {
			continue
		}
		perRow[i] = append(perRow[i], int32(j))
		if h.LeaseEnd != nil && *h.LeaseEnd < h.End {
			d.pastLease = true
		}
	}
	for k := range keySet {
		d.keys = append(d.keys, k)
	}
	sort.Strings(d.keys)
	byStart := func(a, b int32) int { return cmp.Compare(holds[a].Start, holds[b].Start) }
	keyID := make(map[string]int32, len(d.keys))
	for i, k := range d.keys {
		keyID[k] = int32(i)
	}
	// Each row's holds again, compact, for the merging passes.
	rows := make([][]rowHold, n)
	for i := range perRow {
		if !slices.IsSortedFunc(perRow[i], byStart) {
			slices.SortStableFunc(perRow[i], byStart)
		}
		rows[i] = make([]rowHold, len(perRow[i]))
		for x, j := range perRow[i] {
			h := &holds[j]
			rows[i][x] = rowHold{start: h.Start, end: h.End, key: keyID[h.Key], hold: j}
		}
	}
	perRow = nil

	// Merge holds closer than a pixel on the same row and key; widen the
	// gap until the bar count is bounded. Counting first, building once.
	if plotWidthPx < 100 {
		plotWidthPx = 100
	}
	gap := int64(float64(d.span) / plotWidthPx)
	if gap < 1 {
		gap = 1
	}
	// merge counts the bars of gap (merging holds of any key, or of one),
	// giving each to emit; without emit, it stops counting past limit.
	merge := func(gap int64, anyKey bool, limit int, emit func(row int, b bar)) int {
		const mixed = -1 // the key of a bar merging holds of several keys
		count := 0
		for i, hs := range rows {
			var cur rowHold
			n := 0
			for _, h := range hs {
				if n > 0 && (anyKey || h.key == cur.key) && h.start-cur.end < gap && cur.end-cur.start < gap*4 {
					cur.end = max(cur.end, h.end)
					n++
					if h.key != cur.key {
						cur.key = mixed
					}
					continue
				}
				if n > 0 && emit != nil {
					emit(i, d.bar(holds, cur, n))
				}
				cur, n = h, 1
				if count++; emit == nil && count > limit {
					return count
				}
			}
			if n > 0 && emit != nil {
				emit(i, d.bar(holds, cur, n))
			}
		}
		return count
	}
	// Holds of one key merge first; when a row alternates between keys
	// too often for that to bound the bars, neighbours of any key merge.
	anyKey, g := false, gap
	for step := 0; merge(g, anyKey, maxBars, nil) > maxBars && step < 40; step++ {
		if g *= 2; step == 19 {
			anyKey, g = true, gap
		}
	}
	d.bars = make([][]bar, n)
	d.nbars = merge(g, anyKey, 0, func(row int, b bar) {
		d.bars[row] = append(d.bars[row], b)
		d.mixedKeys = d.mixedKeys || b.key == ""
	})
	d.merged = d.nbars < d.holds
	return d
}

// rowHold is a hold as the timeline merges it into bars: its span, its key
// (an index into the keys, or -1 for a bar of several keys) and where it
// is in the holds.
type rowHold struct {
	start, end int64
	key, hold  int32
}

// bar makes the bar of n holds merged into h, which starts with holds[h.hold].
func (d *timelineData) bar(holds []checker.Hold, h rowHold, n int) bar {
	first := &holds[h.hold]
	b := bar{start: h.start, end: h.end, fence: first.Fence, leaseEnd: first.LeaseEnd, n: n}
	if h.key >= 0 {
		b.key = d.keys[h.key]
	}
	return b
}

// maxBars bounds the bars a timeline draws: about four a pixel column
// across the plot's width; a busier history merges nearby holds of a row
// (and the title says so). Each bar costs a filled polygon, which is most
// of a big history's report time.
const maxBars = 3000

// timelinePNG draws holds per process over time, overlaps in red on both
// rows involved, fault windows shaded, and fencing marks: the plot, then
// each layer, then the legend.
func timelinePNG(ops []history.Op, res *checker.Results, heading string) ([]byte, error) {
	const width = 10 * vg.Inch
	d := buildTimeline(ops, res, 96*7.2)
	height := vg.Inch*1.3 + vg.Inch*0.45*vg.Length(len(d.procs))
	height = min(max(height, 3*vg.Inch), 14*vg.Inch)
	p := d.plot(heading)
	cols := faultColourMap(d.faults)
	p.Add(d.backdrop(cols), d.holdBars(), d.overlapMarks(), d.fencingMarks(), d.captions())
	return renderPNG(p, d.legend(cols), width, height)
}

// plot makes the timeline's plot: its title, time axis and a row per process.
func (d *timelineData) plot(heading string) *plot.Plot {
	n := len(d.procs)
	title := heading + " — holds per process"
	if d.merged {
		title += fmt.Sprintf(" (%s holds as %s bars: holds <1px apart merged)", thousands(d.holds), thousands(d.nbars))
	}
	p := newPlot(title, "seconds since start", "")
	p.X.Min, p.X.Max = sec(d.from), sec(max(d.span, d.from+1))
	p.Y.Min, p.Y.Max = -0.5, float64(max(n, 1))-0.5
	every := max(1, n/40)
	var ticks []plot.Tick
	for i, pr := range d.procs {
		lbl := ""
		if i%every == 0 {
			lbl = procLabel(pr)
		}
		ticks = append(ticks, plot.Tick{Value: float64(d.row[pr]), Label: lbl})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Label.Font.Size = 10
	return p
}

// keyColour is the colour of a key's holds (one colour for one key, or for
// a bar of several).
func (d *timelineData) keyColour(k string) color.RGBA {
	if len(d.keys) <= 1 || k == "" {
		return colHold
	}
	return keyColours[slices.Index(d.keys, k)%len(keyColours)]
}

// backdrop draws the rows' alternating backgrounds and the faults' shading (on the rows of the processes they hit, else across).
func (d *timelineData) backdrop(cols map[string]color.RGBA) plot.Plotter {
	n := len(d.procs)
	return plotFunc(func(c draw.Canvas, pl *plot.Plot) {
		trX, trY := pl.Transforms(&c)
		for i := range d.procs {
			if i%2 == 1 {
				y := float64(n - 1 - i)
				rect(&c, color.RGBA{R: 246, G: 246, B: 246, A: 255}, c.Min.X, trY(y-0.5), c.Max.X, trY(y+0.5))
			}
		}
		many := manyInstants(d.faults)
		for _, f := range d.faults {
			col := cols[f.Kind]
			spans := [][2]vg.Length{{c.Min.Y, c.Max.Y}}
			if len(f.Processes) > 0 {
				spans = spans[:0]
				for _, pr := range f.Processes {
					if r, ok := d.row[pr]; ok {
						spans = append(spans, [2]vg.Length{trY(float64(r) - 0.5), trY(float64(r) + 0.5)})
					}
				}
			}
			for _, s := range spans {
				if f.Instant {
					x := trX(sec(f.Start))
					c.StrokeLine2(instantStyle(col, many), x, s[0], x, s[1])
					continue
				}
				x0, x1 := trX(sec(f.Start)), trX(sec(f.End))
				if x1-x0 < vg.Points(1) {
					x1 = x0 + vg.Points(1)
				}
				rect(&c, withAlpha(col, bandAlpha), x0, s[0], x1, s[1])
			}
		}
	})
}

// holdBars draws the hold bars, in their key's colour, paler past the lease.
func (d *timelineData) holdBars() plot.Plotter {
	n := len(d.procs)
	return plotFunc(func(c draw.Canvas, pl *plot.Plot) {
		trX, trY := pl.Transforms(&c)
		for i, bs := range d.bars {
			y := float64(n - 1 - i)
			y0, y1 := trY(y-barHalf), trY(y+barHalf)
			for _, b := range bs {
				col := d.keyColour(b.key)
				x0, x1 := trX(sec(b.start)), trX(sec(b.end))
				if x1-x0 < vg.Points(0.8) {
					x1 = x0 + vg.Points(0.8)
				}
				solidEnd := x1
				if b.n == 1 && b.leaseEnd != nil && *b.leaseEnd < b.end {
					solidEnd = max(x0, trX(sec(*b.leaseEnd)))
					rect(&c, withAlpha(col, 80), solidEnd, y0, x1, y1)
					if !d.merged && d.holds < 500 {
						c.StrokeLine2(draw.LineStyle{Color: col, Width: vg.Points(1.2)}, solidEnd, y0, solidEnd, y1)
						c.StrokeLine2(draw.LineStyle{Color: withAlpha(col, 160), Width: vg.Points(0.8)}, solidEnd, y0, x1, y0)
						c.StrokeLine2(draw.LineStyle{Color: withAlpha(col, 160), Width: vg.Points(0.8)}, solidEnd, y1, x1, y1)
					}
				}
				if solidEnd > x0 {
					rect(&c, col, x0, y0, solidEnd, y1)
				}
			}
		}
	})
}

// overlapMarks draws the overlaps: red on both rows, joined by a dashed line.
func (d *timelineData) overlapMarks() plot.Plotter {
	return plotFunc(func(c draw.Canvas, pl *plot.Plot) {
		trX, trY := pl.Transforms(&c)
		for _, o := range d.overlaps {
			ra, oka := d.row[o.Earlier.Process]
			rb, okb := d.row[o.Later.Process]
			x0, x1 := trX(sec(o.Start)), trX(sec(o.Start+o.Length))
			if x1-x0 < vg.Points(2.5) {
				x1 = x0 + vg.Points(2.5)
			}
			for _, r := range []struct {
				row int
				ok  bool
			}{{ra, oka}, {rb, okb}} {
				if r.ok {
					rect(&c, colOverlap, x0, trY(float64(r.row)-overlapHalf), x1, trY(float64(r.row)+overlapHalf))
				}
			}
			if oka && okb && len(d.overlaps) <= 50 {
				lo, hi := min(ra, rb), max(ra, rb)
				dash := draw.LineStyle{Color: colOverlap, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
				xs := []vg.Length{x0, x1}
				if x1-x0 < vg.Points(6) {
					xs = []vg.Length{(x0 + x1) / 2}
				}
				for _, x := range xs {
					c.StrokeLine2(dash, x, trY(float64(lo)+overlapHalf), x, trY(float64(hi)-overlapHalf))
				}
			}
		}
	})
}

// fencingMarks draws the fencing marks: stale writes rejected and accepted.
func (d *timelineData) fencingMarks() plot.Plotter {
	return plotFunc(func(c draw.Canvas, pl *plot.Plot) {
		trX, trY := pl.Transforms(&c)
		for _, r := range d.rejected {
			if y, ok := d.row[r.Process]; ok {
				markRejected.draw(&c, vg.Point{X: trX(sec(r.Time)), Y: trY(float64(y))})
			}
		}
		for _, s := range d.stale {
			if y, ok := d.row[s.Process]; ok {
				markStale.draw(&c, vg.Point{X: trX(sec(s.Time)), Y: trY(float64(y))})
			}
		}
	})
}

// captions draws fence tokens above the bars (when there are few holds) and overlap captions (when there are few overlaps), placed so they do not collide.
func (d *timelineData) captions() plot.Plotter {
	n := len(d.procs)
	return plotFunc(func(c draw.Canvas, pl *plot.Plot) {
		trX, trY := pl.Transforms(&c)
		var taken []vg.Rectangle
		free := func(r vg.Rectangle) bool {
			for _, t := range taken {
				if r.Min.X < t.Max.X && t.Min.X < r.Max.X && r.Min.Y < t.Max.Y && t.Min.Y < r.Max.Y {
					return false
				}
			}
			return true
		}
		if !d.merged && d.holds < labelHolds {
			lsty := textStyle(8, color.Black)
			lsty.YAlign = text.YBottom
			for i, bs := range d.bars {
				y := trY(float64(n-1-i)+overlapHalf) + vg.Points(1)
				for _, b := range bs {
					if b.fence == nil {
						continue
					}
					txt := "fence " + strconv.FormatInt(*b.fence, 10)
					pt := vg.Point{X: trX(sec(b.start)) + vg.Points(3), Y: y}
					r := vg.Rectangle{Min: pt, Max: vg.Point{X: pt.X + lsty.Width(txt), Y: pt.Y + lsty.Height(txt)}}
					if !free(r) || r.Max.X > c.Max.X {
						continue
					}
					taken = append(taken, r)
					c.FillText(lsty, pt, txt)
				}
			}
		}
		if len(d.overlaps) > 8 {
			return
		}
		sty := textStyle(9, colOverlap)
		sty.Font.Weight = 700
		sty.YAlign = text.YCenter
		pad := vg.Points(2)
		for _, o := range d.overlaps {
			ra, oka := d.row[o.Earlier.Process]
			rb, okb := d.row[o.Later.Process]
			if !oka || !okb {
				continue
			}
			txt := "overlap " + fmtDur(o.Length)
			switch o.Kind {
			case checker.StaleHolder:
				txt += ": stale holder " + procLabel(o.Earlier.Process)
			case checker.DoubleGrant:
				txt += ": double grant"
			}
			w, h := sty.Width(txt), sty.Height(txt)
			ymid := trY((float64(ra) + float64(rb)) / 2)
			if ra == rb {
				ymid = trY(float64(ra) + overlapHalf + 0.08)
			}
			xr := trX(sec(o.Start+o.Length)) + vg.Points(1.5) + vg.Points(4)
			xl := trX(sec(o.Start)) - vg.Points(4) - w
			var pt vg.Point
			var box vg.Rectangle
			placed := false
			for _, y := range []vg.Length{ymid, ymid - h - pad, ymid + h + pad} {
				for _, x := range []vg.Length{xr, xl} {
					x = max(min(x, c.Max.X-w-pad), c.Min.X+pad)
					box = vg.Rectangle{Min: vg.Point{X: x - pad, Y: y - h/2 - pad/2}, Max: vg.Point{X: x + w + pad, Y: y + h/2 + pad/2}}
					if free(box) {
						pt, placed = vg.Point{X: x, Y: y}, true
						break
					}
				}
				if placed {
					break
				}
			}
			if !placed {
				x := max(min(xr, c.Max.X-w-pad), c.Min.X+pad)
				pt = vg.Point{X: x, Y: ymid}
				box = vg.Rectangle{Min: vg.Point{X: x - pad, Y: ymid - h/2 - pad/2}, Max: vg.Point{X: x + w + pad, Y: ymid + h/2 + pad/2}}
			}
			taken = append(taken, box)
			rect(&c, color.NRGBA{R: 255, G: 255, B: 255, A: 225}, box.Min.X, box.Min.Y, box.Max.X, box.Max.Y)
			c.FillText(sty, pt, txt)
		}
	})
}

// legend lists what the timeline shows.
func (d *timelineData) legend(cols map[string]color.RGBA) []legendEntry {
	var leg []legendEntry
	if len(d.keys) <= 1 {
		leg = append(leg, legendEntry{"hold", rectThumb{colHold}})
	} else if len(d.keys) <= len(keyColours) {
		for _, k := range d.keys {
			leg = append(leg, legendEntry{"hold " + k, rectThumb{d.keyColour(k)}})
		}
		if d.mixedKeys {
			leg = append(leg, legendEntry{"holds of several keys", rectThumb{colHold}})
		}
	} else {
		leg = append(leg, legendEntry{fmt.Sprintf("hold (%d keys)", len(d.keys)), rectThumb{colHold}})
	}
	if d.pastLease {
		leg = append(leg, legendEntry{"held past lease", rectThumb{withAlpha(colHold, 80)}})
	}
	if len(d.overlaps) > 0 {
		leg = append(leg, legendEntry{"overlap", rectThumb{colOverlap}})
	}
	if len(d.stale) > 0 {
		leg = append(leg, legendEntry{"stale write accepted", markStale})
	}
	if len(d.rejected) > 0 {
		leg = append(leg, legendEntry{"stale write rejected", markRejected})
	}
	leg = append(leg, faultLegend(d.faults, cols)...)
	return leg
}
