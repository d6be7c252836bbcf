package report

import (
	"fmt"

	"cnbench/internal/model"
)

// ChartValue is one bar or point of a chart, as the chart plots it: in
// the unit of its axis label.
type ChartValue struct {
	// Series is the mode, which the bar's or line's colour shows.
	Series string
	// Group names the bar's group (its topology and parameters, or its
	// percentile); empty on line charts.
	Group string
	// X is a line's x value; zero for bars.
	X, Y float64
	// Low and High are the ends of the error bar drawn about Y; both
	// equal Y where none is drawn.
	Low, High float64
}

// shownUnit is a unit as charts show it, and the factor that converts a
// value in the model's unit into it.
type shownUnit struct {
	scale float64
	unit  string
}

// shownUnits converts the model's units (model.Metrics) into those the
// charts show; a unit not listed is shown as it is.
var shownUnits = map[string]shownUnit{
	"bit/s": {1e-9, "Gbit/s"},
	"us":    {1, "µs"},
	"1/s":   {1, "per second"},
	// A CPU second per GB at 1 Gbit/s, which is 0.125 GB/s, is 0.125 CPU
	// seconds per second: 0.125 cores.
	"s/GB": {1.0 / 8, "cores per Gbit/s"},
}

// metricAxis is how a chart plots metric: the factor from the model's
// unit to the shown one, and the axis label naming the quantity and the
// shown unit.
func metricAxis(metric string) (scale float64, label string) {
	info := model.Metrics[metric]
	shown, ok := shownUnits[info.Unit]
	if !ok {
		shown = shownUnit{1, info.Unit}
	}
	quantity := info.Quantity
	if quantity == "" {
		quantity = metric
	}
	if shown.unit == "" {
		return shown.scale, quantity
	}
	return shown.scale, fmt.Sprintf("%s (%s)", quantity, shown.unit)
}

// shownUnitOf is the unit charts show metric in.
func shownUnitOf(metric string) string {
	if shown, ok := shownUnits[model.Metrics[metric].Unit]; ok {
		return shown.unit
	}
	return model.Metrics[metric].Unit
}

// barValues lists what grouped bars plot.
func barValues(b *groupedBars, groups []string) []ChartValue {
	var out []ChartValue
	for _, ser := range b.series {
		for g, v := range ser.values {
			if v.N == 0 {
				continue
			}
			cv := ChartValue{Series: ser.name, Group: groups[g], Y: v.Mean, Low: v.Mean, High: v.Mean}
			if v.N > 1 {
				cv.Low, cv.High = b.low(v), v.CI95High
			}
			out = append(out, cv)
		}
	}
	return out
}

// lineValues lists what lines with error bars plot.
func lineValues(series []lineSeries) []ChartValue {
	var out []ChartValue
	for _, s := range series {
		for j, x := range s.xs {
			y := s.ys[j]
			cv := ChartValue{Series: s.name, X: x, Y: y.Mean, Low: y.Mean, High: y.Mean}
			if y.N > 1 {
				cv.Low, cv.High = y.CI95Low, y.CI95High
			}
			out = append(out, cv)
		}
	}
	return out
}
