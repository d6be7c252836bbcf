package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// drawSweeps writes, for each axis, one PNG of its time and memory
// figures on log-log axes: scale-AXIS.png in dir.
func drawSweeps(dir string, sweeps []sweep) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, sw := range sweeps {
		p := plot.New()
		p.Title.Text = "cnbench at scale: " + sw.axis.name
		p.X.Label.Text = sw.axis.unit + " (log)"
		p.Y.Label.Text = "ms, MB, Gbit/s (log)"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		p.Legend.Top, p.Legend.Left = true, true
		var lines []any
		for _, f := range figures {
			xs, ys := column(sw, f)
			var pts plotter.XYs
			for i := range xs {
				if ys[i] > 0 && !math.IsNaN(ys[i]) && !math.IsInf(ys[i], 0) {
					pts = append(pts, plotter.XY{X: xs[i], Y: ys[i]})
				}
			}
			if len(pts) < 2 {
				continue
			}
			lines = append(lines, fmt.Sprintf("%s, %s (b=%s)", f.name, f.unit, format(growthExponent(xs, ys))), pts)
		}
		if err := plotutil.AddLinePoints(p, lines...); err != nil {
			return err
		}
		// Room above the curves for the legend.
		p.Y.Max *= 1000
		file := filepath.Join(dir, "scale-"+sw.axis.name+".png")
		if err := p.Save(8*vg.Inch, 6*vg.Inch, file); err != nil {
			return fmt.Errorf("draw %s: %w", file, err)
		}
	}
	return nil
}
