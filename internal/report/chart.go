package report

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"

	"cnbench/internal/model"
	"cnbench/internal/stats"
	"cnbench/internal/workload"
)

// ChartKind names a kind of chart and says what it shows.
type ChartKind struct {
	Name, Help string
}

// ChartKinds lists the chart kinds in the order the HTML report shows them.
var ChartKinds = []ChartKind{
	{"bars", "per workload, the main metric of each mode as bars with 95% confidence intervals"},
	{"flows", "throughput (or transactions/s) against parallel flows, a line per mode"},
	{"msgsize", "throughput (or transactions/s) against message size, a line per mode"},
	{"latency", "latency percentiles p50, p90, p99, p99.9 per mode, from the merged histograms"},
	{"cdf", "latency distribution (CDF) per mode, from the merged histograms"},
	{"flowspread", "for streams of several flows: the slowest, 10th percentile, median, 90th percentile and fastest flow's throughput per mode"},
	{"cpu", "CPU cost: CPU cores per Gbit/s for streams (cpu_s_per_gb / 8), CPU time per transaction for request/response"},
	{"overhead", "each mode's cost against the host baseline of the same case, in percent"},
	{"explain", "for runs made with --explain: each case's CPU time on every CPU per GB or per transaction, stacked by path stage"},
}

// ChartKindNames lists the names of ChartKinds.
func ChartKindNames() []string {
	names := make([]string, len(ChartKinds))
	for i, k := range ChartKinds {
		names[i] = k.Name
	}
	return names
}

// Chart is one figure of a run.
type Chart struct {
	// ID is stable for a run and safe as an HTML id and a file name.
	ID    string
	Kind  string
	Title string
	// XLabel and YLabel are the axes' labels, each naming its unit.
	XLabel, YLabel string
	// Values are the numbers the chart plots, in its axes' units.
	Values []ChartValue

	plot *plot.Plot
	// leftPad makes room for slanted group labels, whose start hangs
	// left of the first group.
	leftPad       vg.Length
	legend        []string
	colors        map[string]color.RGBA
	width, height vg.Length
}

// Charts draws every chart of kind for rep; kind "" means all kinds. A
// kind with nothing to draw (a run with one flow count has no flows
// chart) gives no charts and no error.
func Charts(rep *Report, kind string) ([]Chart, error) {
	if kind != "" && !slices.Contains(ChartKindNames(), kind) {
		return nil, fmt.Errorf("unknown chart kind %q (valid: %s)", kind, strings.Join(ChartKindNames(), ", "))
	}
	cs := chartSet{rep: rep, pal: newPalette(rep)}
	var out []Chart
	for _, k := range ChartKinds {
		if kind != "" && k.Name != kind {
			continue
		}
		charts, err := cs.build(k.Name)
		if err != nil {
			return nil, fmt.Errorf("draw %s charts: %w", k.Name, err)
		}
		out = append(out, charts...)
	}
	return out, nil
}

type chartSet struct {
	rep *Report
	pal palette
}

func (cs *chartSet) build(kind string) ([]Chart, error) {
	var out []Chart
	add := func(ch Chart, ok bool) {
		if ok {
			out = append(out, ch)
		}
	}
	switch kind {
	case "bars":
		for _, w := range cs.workloads() {
			primary := workload.PrimaryMetric(w)
			scale, label := metricAxis(primary)
			add(cs.barChart("bars-"+w, kind, fmt.Sprintf("%s: %s by mode (mean, 95%% CI)", w, quantity(primary)), label,
				cs.measured(w), cs.pal.modes, func(c CaseReport) (stats.Summary, bool) {
					s, ok := c.Metrics[primary]
					return scaleSummary(s, scale), ok
				}, false))
		}
	case "flows", "msgsize":
		return cs.axisCharts(kind)
	case "latency":
		return cs.latencyCharts(), nil
	case "flowspread":
		return cs.flowSpreadCharts(), nil
	case "cdf":
		return cs.cdfCharts()
	case "explain":
		return cs.explainCharts()
	case "cpu":
		for _, w := range cs.workloads() {
			cases := cs.measured(w)
			metric, title := model.CPUSPerGB, "CPU cost per Gbit/s (sender + receiver)"
			if !anyHas(cases, metric) {
				metric, title = model.CPUUSPerTx, "CPU time per transaction (client + server)"
			}
			scale, label := metricAxis(metric)
			add(cs.barChart("cpu-"+w, kind, w+": "+title, label, cases, cs.pal.modes, func(c CaseReport) (stats.Summary, bool) {
				s, ok := c.Metrics[metric]
				return scaleSummary(s, scale), ok
			}, false))
		}
	case "overhead":
		modes := slices.DeleteFunc(slices.Clone(cs.pal.modes), func(m string) bool { return m == baselineMode })
		for _, w := range cs.workloads() {
			primary := workload.PrimaryMetric(w)
			add(cs.barChart("overhead-"+w, kind, fmt.Sprintf("%s: %s overhead against host (95%% CI, above 0 = worse)", w, quantity(primary)),
				"overhead against host (%)", cs.measured(w), modes, func(c CaseReport) (stats.Summary, bool) {
					return overheadBar(c, primary)
				}, true))
		}
	}
	return out, nil
}

// overheadBar is the bar of the overhead chart: the cost against host in
// percent from the ratio of the samples, with its interval.
func overheadBar(c CaseReport, metric string) (stats.Summary, bool) {
	ch, ok := c.VsHost[metric]
	if !ok {
		return stats.Summary{}, false
	}
	o, low, high := ch.OverheadPct(model.Metrics[metric].HigherIsBetter)
	return stats.Summary{Mean: o, CI95Low: low, CI95High: high, N: ch.N}, true
}

// workloads lists the run's workloads in the order it met them.
func (cs *chartSet) workloads() []string {
	var ws []string
	for _, c := range cs.rep.Cases {
		if !slices.Contains(ws, c.Workload) {
			ws = append(ws, c.Workload)
		}
	}
	return ws
}

// measured gives the cases of a workload that have metrics.
func (cs *chartSet) measured(workload string) []CaseReport {
	var out []CaseReport
	for _, c := range cs.rep.Cases {
		if c.Workload == workload && len(c.Metrics) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func anyHas(cases []CaseReport, metric string) bool {
	return slices.ContainsFunc(cases, func(c CaseReport) bool { _, ok := c.Metrics[metric]; return ok })
}

// quantity names what metric measures.
func quantity(metric string) string {
	if q := model.Metrics[metric].Quantity; q != "" {
		return q
	}
	return metric
}

func scaleSummary(s stats.Summary, k float64) stats.Summary {
	s.Mean, s.CI95Low, s.CI95High, s.Stddev, s.Min, s.Max = s.Mean*k, s.CI95Low*k, s.CI95High*k, s.Stddev*k, s.Min*k, s.Max*k
	return s
}

// groupLabeler names a case's group within a workload's bar chart: its
// topology, plus whatever else varies among the workload's cases.
func groupLabeler(cases []CaseReport) func(CaseReport) string {
	params, engines := map[string]bool{}, map[string]bool{}
	for _, c := range cases {
		params[compactParams(c.Params)] = true
		engines[c.Engine] = true
	}
	return func(c CaseReport) string {
		parts := []string{c.Topology}
		if len(params) > 1 {
			parts = append(parts, compactParams(c.Params))
		}
		if len(engines) > 1 {
			parts = append(parts, c.Engine)
		}
		return strings.Join(parts, " ")
	}
}

// barChart draws one bar per mode and group of cases; it reports false
// when no case has a value.
func (cs *chartSet) barChart(id, kind, title, yLabel string, cases []CaseReport, modes []string,
	value func(CaseReport) (stats.Summary, bool), signed bool) (Chart, bool) {
	label := groupLabeler(cases)
	var groups []string
	for _, c := range cases {
		if _, ok := value(c); ok && !slices.Contains(groups, label(c)) {
			groups = append(groups, label(c))
		}
	}
	if len(groups) == 0 {
		return Chart{}, false
	}
	bars := &groupedBars{groups: len(groups), signed: signed}
	var legend []string
	for _, m := range modes {
		ser := barSeries{name: m, color: cs.pal.colors[m], values: make([]stats.Summary, len(groups))}
		found := false
		for _, c := range cases {
			if v, ok := value(c); ok && c.Mode == m {
				// The first case of a group wins; a scenario repeating a
				// case would otherwise stack two bars in one slot.
				if g := slices.Index(groups, label(c)); ser.values[g].N == 0 {
					ser.values[g], found = v, true
				}
			}
		}
		if found {
			bars.series = append(bars.series, ser)
			legend = append(legend, m)
		}
	}
	p := newPlot("", "", yLabel)
	p.Add(bars)
	leftPad := labelGroups(p, groups)
	_, _, ymin, ymax := bars.DataRange()
	p.Y.Min, p.Y.Max = min(0, ymin*1.08), max(0, ymax*1.08)
	width := max(7.5*vg.Inch, vg.Length(len(groups)*len(bars.series))*vg.Points(18)+vg.Points(120))
	ch := cs.chart(id, kind, title, p, legend, width+leftPad)
	ch.leftPad = leftPad
	ch.Values = barValues(bars, groups)
	return ch, true
}

// labelGroups names the groups under their bars, slanted where long
// labels would collide, and returns the room the first label needs left
// of the plot.
func labelGroups(p *plot.Plot, groups []string) vg.Length {
	p.X.Tick.Marker = groupTicks(groups)
	p.X.Tick.Length = 0
	if longest(groups) <= 10 || len(groups) <= 3 {
		return 0
	}
	p.X.Tick.Label.Rotation = math.Pi / 8
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	return p.X.Tick.Label.Width(groups[0]) * vg.Length(math.Cos(math.Pi/8))
}

func longest(ss []string) int {
	n := 0
	for _, s := range ss {
		n = max(n, len(s))
	}
	return n
}

func (cs *chartSet) chart(id, kind, title string, p *plot.Plot, legend []string, width vg.Length) Chart {
	return Chart{ID: slug(id), Kind: kind, Title: title, XLabel: p.X.Label.Text, YLabel: p.Y.Label.Text,
		plot: p, legend: legend, colors: cs.pal.colors, width: width, height: 4.2 * vg.Inch}
}

var unsafeID = regexp.MustCompile(`[^a-z0-9_.=-]+`)

func slug(s string) string {
	return strings.Trim(unsafeID.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// panelKey identifies the cases that share a chart beside the mode: same
// workload, topology, engine and parameters, apart from the parameters
// that clear drops (the chart's x axis).
func panelKey(c CaseReport, clear func(*model.Params)) (key, label string) {
	p := c.Params
	if clear != nil {
		clear(&p)
	}
	label = c.Topology
	if params := compactParams(p); params != "-" {
		label += " · " + params
	}
	// The key holds every parameter, so cases that differ only in one the
	// label leaves out (offloads, placement) never share a line.
	p = p.Comparable()
	p.DurationMS, p.WarmupMS, p.Samples = 0, 0, 0
	return fmt.Sprintf("%s/%s/%s/%+v", c.Workload, c.Topology, c.Engine, p), label
}

type panel struct {
	key, label string
	// id names the panel in chart ids: readable, and unique in the run.
	id    string
	cases []CaseReport
}

// panels groups measured cases by panelKey in order of appearance,
// keeping those where keep holds.
func (cs *chartSet) panels(clear func(*model.Params), keep func(CaseReport) bool) []panel {
	var out []panel
	for _, c := range cs.rep.Cases {
		if len(c.Metrics) == 0 || !keep(c) {
			continue
		}
		key, label := panelKey(c, clear)
		i := slices.IndexFunc(out, func(p panel) bool { return p.key == key })
		if i < 0 {
			id := c.Workload + "-" + strings.ReplaceAll(label, " · ", "-")
			if slices.ContainsFunc(out, func(p panel) bool { return p.id == id }) {
				id += fmt.Sprintf("-%d", len(out))
			}
			out = append(out, panel{key: key, label: label, id: id})
			i = len(out) - 1
		}
		out[i].cases = append(out[i].cases, c)
	}
	return out
}

// axisCharts draws the primary metric against flows or message size, one
// chart per set of otherwise equal cases that holds several values.
func (cs *chartSet) axisCharts(kind string) ([]Chart, error) {
	axis, clear, xLabel := func(p model.Params) int { return p.Flows }, func(p *model.Params) { p.Flows = 0 }, "parallel flows"
	if kind == "msgsize" {
		axis, clear, xLabel = func(p model.Params) int { return p.MsgSize }, func(p *model.Params) { p.MsgSize = 0 }, "message size (bytes)"
	}
	var out []Chart
	for _, pn := range cs.panels(clear, func(c CaseReport) bool { return axis(c.Params) > 0 }) {
		xs := map[int]bool{}
		for _, c := range pn.cases {
			xs[axis(c.Params)] = true
		}
		if len(xs) < 2 {
			continue
		}
		w := pn.cases[0].Workload
		primary := workload.PrimaryMetric(w)
		scale, yLabel := metricAxis(primary)
		var series []lineSeries
		var legend []string
		for _, m := range cs.pal.modes {
			s := lineSeries{name: m, color: cs.pal.colors[m]}
			cases := slices.Clone(pn.cases)
			slices.SortStableFunc(cases, func(a, b CaseReport) int { return cmp.Compare(axis(a.Params), axis(b.Params)) })
			for _, c := range cases {
				v, ok := c.Metrics[primary]
				if c.Mode != m || !ok || slices.Contains(s.xs, float64(axis(c.Params))) {
					continue
				}
				s.xs = append(s.xs, float64(axis(c.Params)))
				s.ys = append(s.ys, scaleSummary(v, scale))
			}
			if len(s.xs) > 0 {
				series = append(series, s)
				legend = append(legend, m)
			}
		}
		p := newPlot("", xLabel, yLabel)
		if err := addLines(p, series); err != nil {
			return nil, err
		}
		values := make([]float64, 0, len(xs))
		for x := range xs {
			values = append(values, float64(x))
		}
		slices.Sort(values)
		ticks := make(plot.ConstantTicks, len(values))
		for i, v := range values {
			ticks[i] = plot.Tick{Value: v, Label: fmt.Sprint(int(v))}
			if kind == "msgsize" {
				ticks[i].Label = compactSize(int(v))
			}
		}
		p.X.Tick.Marker = ticks
		if kind == "msgsize" || values[len(values)-1]/values[0] >= 16 {
			p.X.Scale = plot.LogScale{}
		}
		p.Y.Min = 0
		p.Y.Max *= 1.08
		title := fmt.Sprintf("%s: %s against %s · %s", w, quantity(primary), map[string]string{"flows": "flows", "msgsize": "message size"}[kind], pn.label)
		ch := cs.chart(kind+"-"+pn.id, kind, title, p, legend, 7.5*vg.Inch)
		ch.Values = lineValues(series)
		out = append(out, ch)
	}
	return out, nil
}

func (cs *chartSet) latencyCharts() []Chart {
	groups := make([]string, len(model.LatencyPercentiles))
	metrics := make([]string, len(model.LatencyPercentiles))
	for i, p := range model.LatencyPercentiles {
		groups[i], metrics[i] = "p"+formatPlain(p.Quantile), p.Name
	}
	return cs.metricGroupCharts("latency", "percentile", "latency ("+shownUnitOf(model.LatencyP50US)+")", 1,
		"latency percentiles (merged histograms, 95% CI)", groups, metrics)
}

// flowSpreadMetrics are the flowspread chart's bars, in order.
var flowSpreadMetrics = []string{model.FlowThroughputMinBPS, model.FlowThroughputP10BPS, model.FlowThroughputMedianBPS,
	model.FlowThroughputP90BPS, model.FlowThroughputMaxBPS}

func (cs *chartSet) flowSpreadCharts() []Chart {
	scale, _ := metricAxis(model.FlowThroughputMinBPS)
	return cs.metricGroupCharts("flowspread", "flow", "throughput of one flow ("+shownUnitOf(model.FlowThroughputMinBPS)+")", scale,
		"throughput of the slowest, 10th percentile, median, 90th percentile and fastest flow (mean, 95% CI)",
		[]string{"slowest", "p10", "median", "p90", "fastest"}, flowSpreadMetrics)
}

// metricGroupCharts draws, for each set of otherwise equal cases that has
// metrics[0], one group of bars per metric (named by groups), a bar per
// mode in each, the values times scale.
func (cs *chartSet) metricGroupCharts(kind, xLabel, yLabel string, scale float64, what string, groups, metrics []string) []Chart {
	var out []Chart
	for _, pn := range cs.panels(nil, func(c CaseReport) bool { _, ok := c.Metrics[metrics[0]]; return ok }) {
		bars := &groupedBars{groups: len(groups)}
		var legend []string
		for _, m := range cs.pal.modes {
			i := slices.IndexFunc(pn.cases, func(c CaseReport) bool { return c.Mode == m })
			if i < 0 {
				continue
			}
			ser := barSeries{name: m, color: cs.pal.colors[m], values: make([]stats.Summary, len(groups))}
			for g, name := range metrics {
				ser.values[g] = scaleSummary(pn.cases[i].Metrics[name], scale)
			}
			bars.series = append(bars.series, ser)
			legend = append(legend, m)
		}
		p := newPlot("", xLabel, yLabel)
		p.Add(bars)
		p.X.Tick.Marker = groupTicks(groups)
		p.X.Tick.Length = 0
		_, _, _, ymax := bars.DataRange()
		p.Y.Min, p.Y.Max = 0, ymax*1.08
		title := fmt.Sprintf("%s: %s · %s", pn.cases[0].Workload, what, pn.label)
		ch := cs.chart(kind+"-"+pn.id, kind, title, p, legend, 7.5*vg.Inch)
		ch.Values = barValues(bars, groups)
		out = append(out, ch)
	}
	return out
}

// cdfQuantiles are the points of a CDF line: every percent, then finer
// steps into the tail, where the modes tend to part.
var cdfQuantiles = func() []float64 {
	var qs []float64
	for q := 0.0; q < 99; q++ {
		qs = append(qs, q)
	}
	return append(qs, 99, 99.2, 99.4, 99.5, 99.6, 99.7, 99.8, 99.9, 99.95, 99.99, 100)
}()

func (cs *chartSet) cdfCharts() ([]Chart, error) {
	var out []Chart
	for _, pn := range cs.panels(nil, func(c CaseReport) bool { return c.latency != nil }) {
		p := newPlot("", "latency ("+shownUnitOf(model.LatencyP50US)+", log scale)", "fraction of transactions")
		var legend []string
		var values []ChartValue
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, m := range cs.pal.modes {
			i := slices.IndexFunc(pn.cases, func(c CaseReport) bool { return c.Mode == m })
			if i < 0 {
				continue
			}
			h := pn.cases[i].latency
			pts := make(plotter.XYs, 0, len(cdfQuantiles))
			for _, q := range cdfQuantiles {
				us := math.Max(nsToUS(float64(h.ValueAtQuantile(q))), 0.001)
				pts = append(pts, plotter.XY{X: us, Y: q / 100})
				values = append(values, ChartValue{Series: m, X: us, Y: q / 100, Low: q / 100, High: q / 100})
				lo, hi = math.Min(lo, us), math.Max(hi, us)
			}
			line, err := plotter.NewLine(pts)
			if err != nil {
				return nil, err
			}
			line.Color, line.Width = cs.pal.colors[m], vg.Points(2)
			p.Add(line)
			legend = append(legend, m)
		}
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{format: formatPlain}
		p.X.Min, p.X.Max = lo/1.1, hi*1.1
		p.Y.Min, p.Y.Max = 0, 1
		title := fmt.Sprintf("%s: latency distribution (CDF, all samples merged) · %s", pn.cases[0].Workload, pn.label)
		ch := cs.chart("cdf-"+pn.id, "cdf", title, p, legend, 7.5*vg.Inch)
		ch.Values = values
		out = append(out, ch)
	}
	return out, nil
}

// draw lays out the title, the legend row and the plot on c.
func (ch Chart) draw(c draw.Canvas) {
	sty := draw.TextStyle{Color: color.Black, Font: font.From(chartFont, 13), Handler: plot.DefaultTextHandler, XAlign: draw.XCenter}
	titleH := sty.Height(ch.Title) + vg.Points(10)
	c.FillText(sty, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: c.Max.Y - titleH + vg.Points(4)}, ch.Title)
	c = draw.Crop(c, 0, 0, 0, -titleH)
	legendH := drawLegend(c, ch.legend, ch.colors)
	c = draw.Crop(c, vg.Points(4)+ch.leftPad, -vg.Points(12), vg.Points(4), -legendH-vg.Points(4))
	ch.plot.Draw(c)
}

// ChartFormats lists the file formats charts can be written in.
var ChartFormats = []string{"svg", "png", "pdf"}

// ChartFormat picks the format from a file name's extension.
func ChartFormat(path string) (string, error) {
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if !slices.Contains(ChartFormats, ext) {
		return "", fmt.Errorf("cannot tell the chart format from %q: name the file .svg, .png or .pdf", path)
	}
	return ext, nil
}

// pngDPI makes PNGs sharp enough for slides and print.
const pngDPI = 144

// WriteCharts draws charts one under the other into one file of format
// (see ChartFormats). SVGs embed their fonts so they render the same
// anywhere.
func WriteCharts(w io.Writer, charts []Chart, format string) error {
	if len(charts) == 0 {
		return fmt.Errorf("write charts: nothing to draw")
	}
	var width, height vg.Length
	for _, ch := range charts {
		width, height = max(width, ch.width), height+ch.height
	}
	var canvas vg.CanvasWriterTo
	switch format {
	case "svg":
		canvas = vgsvg.NewWith(vgsvg.UseWH(width, height), vgsvg.EmbedFonts(true))
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(pngDPI))}
	case "pdf":
		canvas = vgpdf.New(width, height)
	default:
		return fmt.Errorf("write charts: unknown format %q (valid: %s)", format, strings.Join(ChartFormats, ", "))
	}
	dc := draw.New(canvas)
	// White behind everything: a transparent PNG turns unreadable on a
	// dark slide.
	dc.FillPolygon(color.White, []vg.Point{{X: 0, Y: 0}, {X: width, Y: 0}, {X: width, Y: height}, {X: 0, Y: height}})
	top := height
	for _, ch := range charts {
		ch.draw(draw.Crop(dc, 0, ch.width-width, top-ch.height, top-height))
		top -= ch.height
	}
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("write charts as %s: %w", format, err)
	}
	return nil
}

// inlineSVG draws one chart as an SVG element for an HTML page: no XML
// prologue, and no embedded fonts, which the page declares once.
func (ch Chart) inlineSVG() (string, error) {
	canvas := vgsvg.NewWith(vgsvg.UseWH(ch.width, ch.height))
	ch.draw(draw.New(canvas))
	var b bytes.Buffer
	if _, err := canvas.WriteTo(&b); err != nil {
		return "", fmt.Errorf("draw chart %s: %w", ch.ID, err)
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return s, nil
}
