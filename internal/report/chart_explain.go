package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"cnbench/internal/explain"
)

// stagePalette gives each stage of the table a colour of its own, in the
// table's order, so a stage looks the same in every chart; idle and
// other are greys, being no part of the path.
var stagePalette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0xe1, 0x57, 0x59, 0xff}, {0x76, 0xb7, 0xb2, 0xff},
	{0x59, 0xa1, 0x4f, 0xff}, {0xed, 0xc9, 0x48, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0xff, 0x9d, 0xa7, 0xff},
	{0x9c, 0x75, 0x5f, 0xff}, {0x1f, 0x77, 0xb4, 0xff}, {0x17, 0xbe, 0xcf, 0xff}, {0xbc, 0xbd, 0x22, 0xff},
	{0x8c, 0x56, 0x4b, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0xe3, 0x77, 0xc2, 0xff}, {0x39, 0x3b, 0x79, 0xff},
}

func stageColors(stages []explain.Stage) map[string]color.RGBA {
	colors := map[string]color.RGBA{}
	i := 0
	for _, s := range stages {
		switch s.Name {
		case explain.StageOther:
			colors[s.Name] = color.RGBA{0xb0, 0xb0, 0xb0, 0xff}
		case explain.StageIdle, explain.StageProfiler, explain.StageElsewhere:
			colors[s.Name] = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
		default:
			colors[s.Name] = stagePalette[i%len(stagePalette)]
			i++
		}
	}
	return colors
}

// explainCharts draws, per workload, a stacked bar per explained case:
// its CPU time per unit of work on every CPU, by stage.
func (cs *chartSet) explainCharts() ([]Chart, error) {
	stages := explain.Default.Stages
	colors := stageColors(stages)
	var out []Chart
	for _, w := range cs.workloads() {
		var cases []CaseReport
		for _, c := range cs.measured(w) {
			if c.Explanation != nil && c.Explanation.Breakdown != nil {
				cases = append(cases, c)
			}
		}
		if len(cases) == 0 {
			continue
		}
		unitName, f := costUnit(cases[0].Explanation.Breakdown.Unit)
		label := groupLabeler(cases)
		groups := make([]string, len(cases))
		for i, c := range cases {
			groups[i] = c.Mode + " " + label(c)
		}
		p := newPlot("", "", fmt.Sprintf("CPU time on all CPUs (%s)", unitName))
		var prev *plotter.BarChart
		var legend []string
		var values []ChartValue
		top := 0.0
		for _, st := range stages {
			vs := make(plotter.Values, len(cases))
			found := false
			for i, c := range cases {
				if v := c.Explanation.Breakdown.PerUnitS[st.Name] * f; v > 0 && !math.IsInf(v, 0) {
					vs[i], found = v, true
					values = append(values, ChartValue{Series: st.Name, Group: groups[i], Y: v, Low: v, High: v})
				}
			}
			if !found {
				continue
			}
			bar, err := plotter.NewBarChart(vs, vg.Points(28))
			if err != nil {
				return nil, err
			}
			bar.Color = colors[st.Name]
			bar.LineStyle.Width = 0
			if prev != nil {
				bar.StackOn(prev)
			}
			p.Add(bar)
			prev = bar
			legend = append(legend, st.Name)
		}
		for _, c := range cases {
			top = max(top, c.Explanation.Breakdown.TotalPerUnitS*f)
		}
		leftPad := labelGroups(p, groups)
		p.X.Min, p.X.Max = -0.7, float64(len(groups))-0.3
		p.Y.Min, p.Y.Max = 0, top*1.08
		width := max(7.5*vg.Inch, vg.Length(len(groups))*vg.Points(60)+vg.Points(120))
		title := fmt.Sprintf("%s: where the CPU time went, by stage (%s, idle and profiler left out)", w, unitName)
		ch := cs.chart("explain-"+w, "explain", title, p, legend, width+leftPad)
		ch.colors = colors
		ch.leftPad = leftPad
		ch.Values = values
		out = append(out, ch)
	}
	return out, nil
}
