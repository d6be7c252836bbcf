package report

import (
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"cnbench/internal/stats"
)

// chartFont is the face of all chart text. A sans face reads better at
// small sizes than gonum's default serif; Liberation ships inside the
// plotting library, so every output renders it the same way.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

var (
	gridColor  = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	axisColor  = color.RGBA{0x44, 0x44, 0x44, 0xff}
	errBarGray = color.RGBA{0x22, 0x22, 0x22, 0xff}
)

// newPlot starts a plot in the house style: sans text, light horizontal
// grid, no frame beyond the two axes.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(chartFont, 13)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(chartFont, 11)
		a.Label.TextStyle.Color = axisColor
		a.Tick.Label.Font = font.From(chartFont, 10)
		a.Tick.Label.Color = axisColor
		a.LineStyle.Color = axisColor
		a.Tick.LineStyle.Color = axisColor
	}
	p.X.Padding, p.Y.Padding = vg.Points(4), vg.Points(4)
	p.Y.Tick.Marker = plainTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	grid.Horizontal.Color = gridColor
	p.Add(grid)
	return p
}

// groupedBars draws bars side by side in groups, one bar per series in
// each group, with 95% confidence intervals as error bars. Group g is
// centred on x = g, so the x ticks can name the groups.
type groupedBars struct {
	series []barSeries
	groups int
	// signed marks values that are changes, such as overheads, whose
	// intervals may rightly reach below zero: they are not cut there.
	signed bool
}

type barSeries struct {
	name  string
	color color.Color
	// values[g] is the bar in group g; a zero N means no bar.
	values []stats.Summary
}

var _ plot.Plotter = (*groupedBars)(nil)
var _ plot.DataRanger = (*groupedBars)(nil)

// groupWidth is the share of the space between group centres the bars
// take; the rest separates the groups.
const groupWidth = 0.8

func (b *groupedBars) barSpan(g, s int) (x0, x1 float64) {
	w := groupWidth / float64(len(b.series))
	x0 = float64(g) - groupWidth/2 + float64(s)*w
	return x0 + w*0.06, x0 + w*0.94
}

func (b *groupedBars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for s, ser := range b.series {
		for g, v := range ser.values {
			if v.N == 0 {
				continue
			}
			x0, x1 := b.barSpan(g, s)
			y0, y1 := trY(0), trY(v.Mean)
			pts := []vg.Point{{X: trX(x0), Y: y0}, {X: trX(x1), Y: y0}, {X: trX(x1), Y: y1}, {X: trX(x0), Y: y1}}
			c.FillPolygon(ser.color, c.ClipPolygonY(pts))
			if v.N < 2 {
				continue
			}
			mid := trX((x0 + x1) / 2)
			capW := min(vg.Points(4), (trX(x1)-trX(x0))/3)
			lo, hi := trY(b.low(v)), trY(v.CI95High)
			sty := draw.LineStyle{Color: errBarGray, Width: vg.Points(1)}
			c.StrokeLines(sty, c.ClipLinesY([]vg.Point{{X: mid, Y: lo}, {X: mid, Y: hi}})...)
			c.StrokeLines(sty, c.ClipLinesY([]vg.Point{{X: mid - capW, Y: lo}, {X: mid + capW, Y: lo}})...)
			c.StrokeLines(sty, c.ClipLinesY([]vg.Point{{X: mid - capW, Y: hi}, {X: mid + capW, Y: hi}})...)
		}
	}
}

// DataRange spans every group, zero and the ends of every interval.
func (b *groupedBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = -0.5, float64(b.groups)-0.5
	for _, ser := range b.series {
		for _, v := range ser.values {
			if v.N == 0 {
				continue
			}
			lo, hi := v.Mean, v.Mean
			if v.N > 1 {
				lo, hi = b.low(v), v.CI95High
			}
			ymin, ymax = math.Min(ymin, lo), math.Max(ymax, hi)
		}
	}
	return xmin, xmax, ymin, ymax
}

// low is the lower end of the error bar of v.
func (b *groupedBars) low(v stats.Summary) float64 {
	if b.signed {
		return v.CI95Low
	}
	return ciLow(v)
}

// ciLow is the interval's lower end, cut at zero for a positive mean: a
// rate or a latency cannot be negative, and a t interval from two samples
// easily reaches below zero.
func ciLow(s stats.Summary) float64 {
	if s.Mean >= 0 {
		return math.Max(s.CI95Low, 0)
	}
	return s.CI95Low
}

// groupTicks names the groups under their bars.
func groupTicks(labels []string) plot.ConstantTicks {
	ticks := make([]plot.Tick, len(labels))
	for i, l := range labels {
		ticks[i] = plot.Tick{Value: float64(i), Label: l}
	}
	return ticks
}

// logTicks labels 1, 2 and 5 times each power of ten within the range, so
// a narrow logarithmic axis still carries several labels.
type logTicks struct{ format func(float64) string }

func (t logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	if lo <= 0 || hi <= lo || !finiteRange(lo, hi) {
		return nil
	}
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v, Label: t.format(v)})
			}
		}
	}
	return ticks
}

// finiteRange reports whether an axis can have ticks: gonum's tick
// search never ends on a NaN or infinite bound, which statistics over
// values near the float limit give.
func finiteRange(lo, hi float64) bool {
	return !math.IsNaN(lo) && !math.IsNaN(hi) && !math.IsInf(lo, 0) && !math.IsInf(hi, 0)
}

// plainTicks are gonum's default ticks labelled without trailing zeros:
// "25000", not "25000.00".
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	if !finiteRange(lo, hi) {
		return nil
	}
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			// Rounding to 12 significant digits drops the float noise
			// that tick arithmetic leaves (0.30000000000000004).
			v, _ := strconv.ParseFloat(strconv.FormatFloat(ticks[i].Value, 'g', 12, 64), 64)
			ticks[i].Label = formatPlain(v)
		}
	}
	return ticks
}

func formatPlain(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// lineSeries is one mode's line in a chart over a numeric axis.
type lineSeries struct {
	name  string
	color color.Color
	xs    []float64
	ys    []stats.Summary
}

// addLines draws each series as a line with markers and, where a point
// has several samples, its 95% confidence interval.
func addLines(p *plot.Plot, series []lineSeries) error {
	for i, s := range series {
		pts := make(plotter.XYs, len(s.xs))
		errs := make(plotter.YErrors, len(s.xs))
		for j := range s.xs {
			pts[j] = plotter.XY{X: s.xs[j], Y: s.ys[j].Mean}
			if s.ys[j].N > 1 {
				errs[j].Low, errs[j].High = s.ys[j].Mean-s.ys[j].CI95Low, s.ys[j].CI95High-s.ys[j].Mean
			}
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		line.Color, line.Width = s.color, vg.Points(2)
		points.Color, points.Radius = s.color, vg.Points(3)
		points.Shape = markerShapes[i%len(markerShapes)]
		bars, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{pts, errs})
		if err != nil {
			return err
		}
		bars.Color, bars.CapWidth = s.color, vg.Points(6)
		p.Add(line, bars, points)
	}
	return nil
}

// markerShapes tell lines apart when colours do not (print, colour
// blindness).
var markerShapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{},
}

// drawLegend writes one row of colour swatches and names, centred at the
// top of c, and returns the height it took. A row above the plot never
// hides data, which a legend inside the plot area can.
func drawLegend(c draw.Canvas, names []string, colors map[string]color.RGBA) vg.Length {
	if len(names) == 0 {
		return 0
	}
	sty := draw.TextStyle{Color: axisColor, Font: font.From(chartFont, 10), Handler: plot.DefaultTextHandler}
	sw, gap := vg.Points(10), vg.Points(14)
	var total vg.Length
	for _, n := range names {
		total += sw + vg.Points(4) + sty.Width(n) + gap
	}
	total -= gap
	height := vg.Points(20)
	x := c.Min.X + (c.Max.X-c.Min.X-total)/2
	y := c.Max.Y - height/2
	for _, n := range names {
		c.FillPolygon(colors[n], []vg.Point{{X: x, Y: y - sw/2}, {X: x + sw, Y: y - sw/2}, {X: x + sw, Y: y + sw/2}, {X: x, Y: y + sw/2}})
		x += sw + vg.Points(4)
		c.FillText(sty, vg.Point{X: x, Y: y - sty.Height(n)/3}, n)
		x += sty.Width(n) + gap
	}
	return height
}
