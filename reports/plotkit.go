package reports

import (
	"image"
	"image/color"
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// maxPoints bounds the glyphs one plot draws; larger inputs are sampled or
// merged, and the plot says so.
const maxPoints = 8000

// bandAlpha is the opacity of fault shading.
const bandAlpha = 70

// Colours shared by the plots.
var (
	colOverlap  = color.RGBA{R: 215, G: 25, B: 28, A: 255}
	colHold     = color.RGBA{R: 49, G: 110, B: 180, A: 255}
	colOK       = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	colFail     = color.RGBA{R: 90, G: 110, B: 200, A: 255}
	colInfo     = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	colRejected = color.RGBA{R: 0, G: 120, B: 60, A: 255}
	colStale    = color.RGBA{R: 20, G: 20, B: 20, A: 255}
)

// keyColours colour holds by key when a run has several keys (no reds:
// red is for overlaps).
var keyColours = []color.RGBA{
	{R: 49, G: 110, B: 180, A: 255},
	{R: 44, G: 160, B: 44, A: 255},
	{R: 140, G: 86, B: 75, A: 255},
	{R: 23, G: 190, B: 207, A: 255},
	{R: 127, G: 127, B: 127, A: 255},
	{R: 188, G: 189, B: 34, A: 255},
	{R: 31, G: 60, B: 110, A: 255},
	{R: 152, G: 223, B: 138, A: 255},
}

// faultColours for known nemesis kinds; others take faultPalette in turn.
var faultColours = map[string]color.RGBA{
	"pause":        {R: 148, G: 103, B: 189, A: 255},
	"server-pause": {R: 196, G: 156, B: 148, A: 255},
	"partition":    {R: 255, G: 170, B: 60, A: 255},
	"latency":      {R: 220, G: 200, B: 40, A: 255},
	"clock":        {R: 23, G: 190, B: 207, A: 255},
	"kill":         {R: 60, G: 60, B: 60, A: 255},
	"restart":      {R: 110, G: 110, B: 110, A: 255},
	"failover":     {R: 227, G: 119, B: 194, A: 255},
	"terminate":    {R: 140, G: 40, B: 120, A: 255},
}

var faultPalette = []color.RGBA{
	{R: 174, G: 199, B: 232, A: 255},
	{R: 255, G: 187, B: 120, A: 255},
	{R: 197, G: 176, B: 213, A: 255},
	{R: 219, G: 219, B: 141, A: 255},
	{R: 158, G: 218, B: 229, A: 255},
}

// faultColourMap assigns a colour to every kind in fs.
func faultColourMap(fs []fault) map[string]color.RGBA {
	m := map[string]color.RGBA{}
	n := 0
	for _, k := range faultKinds(fs) {
		if c, ok := faultColours[k]; ok {
			m[k] = c
			continue
		}
		m[k] = faultPalette[n%len(faultPalette)]
		n++
	}
	return m
}

func withAlpha(c color.RGBA, a uint8) color.NRGBA {
	return color.NRGBA{R: c.R, G: c.G, B: c.B, A: a}
}

var sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

func textStyle(size vg.Length, c color.Color) text.Style {
	return text.Style{
		Color:   c,
		Font:    font.From(sansFont, size),
		Handler: plot.DefaultTextHandler,
	}
}

// newPlot returns a plot with sans-serif text and a light grid-free look.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sansFont, 12)
	p.Title.Padding = vg.Points(6)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sansFont, 10)
		a.Tick.Label.Font = font.From(sansFont, 9)
	}
	p.X.Label.Text = xlabel
	p.X.Tick.Marker = secTicks{}
	p.Y.Label.Text = ylabel
	return p
}

// plotFunc adapts a function to plot.Plotter.
type plotFunc func(c draw.Canvas, p *plot.Plot)

func (f plotFunc) Plot(c draw.Canvas, p *plot.Plot) { f(c, p) }

// rect fills the rectangle between two canvas points.
func rect(c *draw.Canvas, clr color.Color, x0, y0, x1, y1 vg.Length) {
	c.FillPolygon(clr, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
}

// Legend thumbnails.
type (
	rectThumb  struct{ c color.Color }
	lineThumb  struct{ sty draw.LineStyle }
	glyphThumb struct{ sty []draw.GlyphStyle }
)

func (t rectThumb) Thumbnail(c *draw.Canvas) {
	pad := (c.Max.Y - c.Min.Y) * 0.15
	rect(c, t.c, c.Min.X, c.Min.Y+pad, c.Max.X, c.Max.Y-pad)
}

func (t lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(t.sty, c.Min.X, y, c.Max.X, y)
}

func (t glyphThumb) Thumbnail(c *draw.Canvas) {
	for _, s := range t.sty {
		c.DrawGlyph(s, c.Center())
	}
}

// legendEntry is one line of a plot's side legend.
type legendEntry struct {
	name  string
	thumb plot.Thumbnailer
}

// renderPNG draws p with a legend column on its right and encodes a PNG.
func renderPNG(p *plot.Plot, entries []legendEntry, w, h vg.Length) ([]byte, error) {
	img := vgimg.New(w, h) // white all over, legend column included
	dc := draw.New(img)
	var legW vg.Length
	if len(entries) > 0 {
		leg := plot.NewLegend()
		leg.TextStyle = textStyle(9, color.Black)
		leg.Top, leg.Left = true, true
		leg.ThumbnailWidth = vg.Points(18)
		leg.Padding = vg.Points(2)
		for _, e := range entries {
			leg.Add(e.name, e.thumb)
		}
		r := leg.Rectangle(dc)
		legW = r.Max.X - r.Min.X + vg.Points(20)
		if legW > w/3 {
			legW = w / 3
		}
		lc := draw.Crop(dc, w-legW+vg.Points(12), 0, 0, -vg.Points(24))
		leg.Draw(lc)
	}
	p.Draw(draw.Crop(dc, vg.Points(2), -legW, vg.Points(2), -vg.Points(4)))
	if rgba, ok := img.Image().(*image.RGBA); ok {
		return encodePNG(rgba)
	}
	return stdPNG(img.Image())
}

// instantStyle is the line of an instant fault; many instants get fainter lines.
func instantStyle(col color.RGBA, many bool) draw.LineStyle {
	if many {
		return draw.LineStyle{Color: withAlpha(col, 150), Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
	}
	return draw.LineStyle{Color: col, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
}

// manyInstants reports whether fs has so many instant faults that their
// lines should be faint.
func manyInstants(fs []fault) bool {
	n := 0
	for _, f := range fs {
		if f.Instant {
			n++
		}
	}
	return n > 20
}

// bandsPlotter shades fault windows over the whole height of the data area
// and draws instant faults as vertical lines.
func bandsPlotter(fs []fault, cols map[string]color.RGBA) plot.Plotter {
	return plotFunc(func(c draw.Canvas, p *plot.Plot) {
		trX, _ := p.Transforms(&c)
		many := manyInstants(fs)
		for _, f := range fs {
			col := cols[f.Kind]
			if f.Instant {
				x := trX(sec(f.Start))
				c.StrokeLine2(instantStyle(col, many), x, c.Min.Y, x, c.Max.Y)
				continue
			}
			x0, x1 := trX(sec(f.Start)), trX(sec(f.End))
			if x1-x0 < vg.Points(1) {
				x1 = x0 + vg.Points(1)
			}
			rect(&c, withAlpha(col, bandAlpha), x0, c.Min.Y, x1, c.Max.Y)
		}
	})
}

// faultLegend returns legend entries for the kinds of fs.
func faultLegend(fs []fault, cols map[string]color.RGBA) []legendEntry {
	instant := map[string]bool{}
	for _, f := range fs {
		if f.Instant {
			instant[f.Kind] = true
		}
	}
	var out []legendEntry
	for _, k := range faultKinds(fs) {
		if instant[k] {
			out = append(out, legendEntry{k, lineThumb{instantStyle(cols[k], false)}})
		} else {
			out = append(out, legendEntry{k, rectThumb{withAlpha(cols[k], bandAlpha)}})
		}
	}
	return out
}

// sec converts history nanoseconds to seconds.
func sec(ns int64) float64 { return float64(ns) / 1e9 }

// fmtDur prints a duration of ns nanoseconds briefly ("1.25s", "3.4ms").
func fmtDur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= 100*time.Second:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d >= time.Microsecond:
		return d.Round(10 * time.Nanosecond).String()
	}
	return d.String()
}

// durTicks labels a log-scale axis in seconds with durations at powers of ten.
type durTicks struct{}

func (durTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 {
		min = 1e-6
	}
	if max <= min {
		max = min * 10
	}
	lo := math.Floor(math.Log10(min))
	hi := math.Ceil(math.Log10(max))
	var ts []plot.Tick
	in := func(v float64) bool { return v >= min*(1-1e-9) && v <= max*(1+1e-9) }
	for e := lo; e <= hi; e++ {
		v := math.Pow(10, e)
		if in(v) {
			ts = append(ts, plot.Tick{Value: v, Label: fmtDur(int64(math.Round(v * 1e9)))})
		}
		for i := 2; i < 10; i++ {
			if in(v * float64(i)) {
				ts = append(ts, plot.Tick{Value: v * float64(i)})
			}
		}
	}
	return ts
}

// secTicks labels a seconds axis with round steps, about eight labels.
type secTicks struct{}

func (secTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if span <= 0 {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	raw := span / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	minor := step / 5
	if step/mag == 2 {
		minor = step / 4
	}
	prec := max(0, -int(math.Floor(math.Log10(step))))
	var ts []plot.Tick
	for i := math.Ceil(lo / minor); i*minor <= hi+minor*1e-9; i++ {
		v := i * minor
		if r := math.Round(v / step); math.Abs(v/step-r) < 1e-9 {
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', prec, 64)})
		} else {
			ts = append(ts, plot.Tick{Value: v})
		}
	}
	return ts
}

// thousands formats n with thin separators for captions ("200,000").
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
