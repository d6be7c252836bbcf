package report

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot/font"

	"cnbench/internal/explain"
	"cnbench/internal/model"
)

//go:embed html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Parse(htmlSource))

// htmlPage is what the template fills in.
type htmlPage struct {
	Title    string
	Run      model.Run
	Duration string
	Env      [][2]string
	Header   []string
	Right    []bool
	Rows     [][]string
	Sections []htmlSection
	Skipped  []CaseReport
	Warnings []string
	FontCSS  template.CSS
	// Flames are the explained cases' flame graphs, StageLegend their
	// colours.
	Flames      []htmlFlame
	StageLegend []htmlSwatch
	// Paths are the explained request/response cases' times between the
	// stages of their path.
	Paths []htmlPath
}

type htmlPath struct {
	Index      int
	Key, Note  string
	Directions []htmlPathDirection
}

type htmlPathDirection struct {
	Name             string
	Messages, Others int
	Gaps             []htmlGap
	Total, VsHost    string
	Mean             string
}

// htmlGap is one gap between stages, with its bar's width in percent of
// the direction's total.
type htmlGap struct {
	From, To string
	US       string
	Width    template.CSS
}

type htmlFlame struct {
	Index        int
	Key, Summary string
	Note         string
	SVG          template.HTML
}

type htmlSwatch struct {
	Name  string
	Color template.CSS
}

type htmlSection struct {
	Kind   string
	Title  string
	Help   string
	Charts []htmlChart
	// Empty says why the section has no chart.
	Empty string
}

type htmlChart struct {
	ID, Title string
	SVG       template.HTML
	// Wide charts scroll sideways at their own size rather than shrink
	// until their labels are unreadable.
	Wide bool
}

// sectionTitles head the HTML report's chart sections.
var sectionTitles = map[string]string{
	"bars": "Results by mode", "flows": "Throughput against flows", "msgsize": "Throughput against message size",
	"latency": "Latency percentiles", "cdf": "Latency distribution", "cpu": "CPU cost", "overhead": "Overhead against host",
	"explain": "Where the CPU time went",
}

// emptyReasons say why a run has no chart of a kind.
var emptyReasons = map[string]string{
	"bars":     "No case has measurements.",
	"flows":    "No set of cases differs in the number of flows alone; run several --flows values to draw this chart.",
	"msgsize":  "No set of cases differs in message size alone; run several --msg-size values to draw this chart.",
	"latency":  "No case measured latency (a request/response workload such as tcp_rr does).",
	"cdf":      "No case has latency histograms.",
	"cpu":      "No case measured CPU cost.",
	"overhead": "No case has a host baseline with the same topology, workload and parameters.",
	"explain":  "No case was explained; run with --explain to profile each sample by path stage.",
}

// maxPageChartWidth is the widest chart the page shows whole; it fits the
// page's 1136 px content column.
const maxPageChartWidth = 850 // points

// WriteHTML writes rep as one self-contained HTML page: charts are inline
// SVG and the one font they use is embedded, so the file opens anywhere,
// offline, and looks the same.
func WriteHTML(w io.Writer, rep *Report) error {
	page := htmlPage{
		Title:  fmt.Sprintf("cnbench run %d: %s", rep.Run.ID, rep.Run.Scenario),
		Run:    rep.Run,
		Header: tableHeader, Right: rightAligned,
		Warnings: rep.Warnings,
	}
	if !rep.Run.Finished.IsZero() {
		page.Duration = rep.Run.Finished.Sub(rep.Run.Started).Round(time.Second).String()
	}
	page.Env = environmentRows(rep.Run.Env)
	for _, c := range rep.Cases {
		row := tableRow(c)
		for len(row) < len(tableHeader) {
			row = append(row, "")
		}
		page.Rows = append(page.Rows, row)
		if c.Status == model.StatusSkipped || c.Status == model.StatusFailed {
			page.Skipped = append(page.Skipped, c)
		}
	}
	charts, err := Charts(rep, "")
	if err != nil {
		return err
	}
	for _, k := range ChartKinds {
		sec := htmlSection{Kind: k.Name, Title: sectionTitles[k.Name], Help: k.Help}
		for _, ch := range charts {
			if ch.Kind != k.Name {
				continue
			}
			svg, err := ch.inlineSVG()
			if err != nil {
				return err
			}
			// The SVG is our own output, with all text escaped by the
			// plotting library.
			sec.Charts = append(sec.Charts, htmlChart{ID: "chart-" + ch.ID, Title: ch.Title, SVG: template.HTML(svg), Wide: ch.width > maxPageChartWidth})
		}
		if len(sec.Charts) == 0 {
			sec.Empty = emptyReasons[k.Name]
		}
		page.Sections = append(page.Sections, sec)
	}
	page.Flames, page.StageLegend = flames(rep)
	page.Paths = paths(rep)
	if page.FontCSS, err = fontFaceCSS(); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := htmlTemplate.Execute(&b, page); err != nil {
		return fmt.Errorf("fill html template: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}

func environmentRows(env model.Environment) [][2]string {
	rows := [][2]string{
		{"host name", env.Hostname},
		{"kernel", env.Kernel},
		{"CPU", fmt.Sprintf("%s, %d cores, %d NUMA nodes", env.CPUModel, env.Cores, env.NUMANodes)},
		{"memory", fmt.Sprintf("%d MiB", env.MemoryMB)},
		{"TCP congestion control (default)", env.TCPCongestionControl},
		{"cnbench", env.Version},
		{"Go", env.GoVersion},
	}
	tools := make([]string, 0, len(env.Tools))
	for name := range env.Tools {
		tools = append(tools, name)
	}
	slices.Sort(tools)
	for _, name := range tools {
		rows = append(rows, [2]string{name, env.Tools[name]})
	}
	return rows
}

// fontFaceCSS declares the charts' font with the font itself inline, once
// for the whole page rather than once per chart.
func fontFaceCSS() (template.CSS, error) {
	face := font.DefaultCache.Lookup(chartFont, 10)
	var raw bytes.Buffer
	if _, err := face.Face.WriteSourceTo(nil, &raw); err != nil {
		return "", fmt.Errorf("read chart font: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "@font-face{font-family:%q;font-style:normal;font-weight:normal;src:url(data:font/ttf;base64,%s) format(\"truetype\");}",
		"Liberation Sans", base64.StdEncoding.EncodeToString(raw.Bytes()))
	return template.CSS(b.String()), nil
}

// NoChartReason says why a run has no chart of kind.
func NoChartReason(kind string) string { return emptyReasons[kind] }

// flames draws each explained case's flame graph.
func flames(rep *Report) ([]htmlFlame, []htmlSwatch) {
	colors := stageColors(explain.Default.Stages)
	var out []htmlFlame
	for _, c := range rep.Cases {
		e := c.Explanation
		if e == nil {
			continue
		}
		f := htmlFlame{Index: c.Index, Key: c.Key, Summary: e.Summary(c.Case), Note: e.Note}
		if e.Breakdown != nil {
			// Our own SVG: every name in it is escaped (flameSVG).
			f.SVG = template.HTML(flameSVG(e.stacks, colors))
			f.Note = ""
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, nil
	}
	var legend []htmlSwatch
	for _, s := range explain.Default.Stages {
		c := colors[s.Name]
		legend = append(legend, htmlSwatch{s.Name, template.CSS(fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B))})
	}
	return out, legend
}

// paths lays out each explained request/response case's time between
// stages, a bar per gap as wide as its share of the gaps' sum.
func paths(rep *Report) []htmlPath {
	var out []htmlPath
	for _, c := range rep.Cases {
		e := c.Explanation
		if e == nil || e.Path == nil {
			continue
		}
		hp := htmlPath{Index: c.Index, Key: c.Key}
		if len(e.Path.Directions) == 0 {
			hp.Note = strings.Join(e.Path.Notes, "; ")
		}
		for _, d := range e.Path.Directions {
			sum := 0.0
			for _, g := range d.GapsUS {
				sum += g
			}
			hd := htmlPathDirection{Name: d.Direction, Messages: d.Messages, Others: d.Others, Total: fmt.Sprintf("%.2f", d.TotalUS), Mean: fmt.Sprintf("%.2f", d.MeanUS)}
			if v, ok := e.PathVsHostUS[d.Direction]; ok {
				hd.VsHost = fmt.Sprintf("%+.2f", v)
			}
			for i, g := range d.GapsUS {
				w := 0.0
				if sum > 0 {
					w = 100 * g / sum
				}
				hd.Gaps = append(hd.Gaps, htmlGap{From: d.Stages[i], To: d.Stages[i+1], US: fmt.Sprintf("%.2f", g) + rangeOf(d.GapsRangeUS, i),
					Width: template.CSS(fmt.Sprintf("%.1f%%", w))})
			}
			hp.Directions = append(hp.Directions, hd)
		}
		out = append(out, hp)
	}
	return out
}
