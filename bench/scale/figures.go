package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"gonum.org/v1/gonum/stat"

	"cnbench/internal/model"
	"cnbench/internal/stats"
)

// point is one case's figures.
type point struct {
	x                                int
	endpoints                        int
	buildMS, startMS, stopMS, downMS float64
	runnerMB, enginesMB              float64
	gbps, sPerGB, jain               float64
}

// sweep is an axis with its measured points.
type sweep struct {
	axis   axis
	points []point
}

// fill reads a case's outcome and the means of its samples' metrics.
func (p *point) fill(c model.CaseResult) {
	servers, clients := c.Params.Endpoints()
	p.endpoints = servers + clients
	o := c.Outcome
	p.buildMS, p.startMS, p.stopMS, p.downMS = float64(o.BuildMS), float64(o.StartMS), float64(o.StopMS), float64(o.TeardownMS)
	mean := func(metric string) float64 {
		var xs []float64
		for _, s := range c.Samples {
			if v, ok := s.Values[metric]; ok {
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 {
			return math.NaN()
		}
		return stats.Summarize(xs).Mean
	}
	p.gbps = mean(model.ThroughputBPS) / 1e9
	p.sPerGB = mean(model.CPUSPerGB)
	p.jain = mean(model.FlowFairnessJain)
	if math.IsNaN(p.jain) {
		p.jain = 1 // one flow has nobody to be unfair to
	}
}

// figure is one column: its name, unit and how a point gives it.
type figure struct {
	name, unit string
	of         func(p point) float64
}

var figures = []figure{
	{"setup", "ms", func(p point) float64 { return p.buildMS + p.startMS }},
	{"setup per endpoint", "ms", func(p point) float64 { return p.buildMS / float64(p.endpoints) }},
	{"teardown", "ms", func(p point) float64 { return p.stopMS + p.downMS }},
	{"around the sample", "ms", func(p point) float64 { return p.buildMS + p.startMS + p.stopMS + p.downMS }},
	{"runner peak", "MB", func(p point) float64 { return p.runnerMB }},
	{"engines peak", "MB", func(p point) float64 { return p.enginesMB }},
	{"throughput", "Gbit/s", func(p point) float64 { return p.gbps }},
	{"CPU per GB", "s/GB", func(p point) float64 { return p.sPerGB }},
	{"flow fairness", "Jain", func(p point) float64 { return p.jain }},
}

// growthExponent is the least-squares slope of log y against log x over
// the points whose x and y are positive and finite: how a figure grows
// with the axis (y ~ x^b). NaN with fewer than two such points.
func growthExponent(xs, ys []float64) float64 {
	var lx, ly []float64
	for i := range xs {
		if xs[i] > 0 && ys[i] > 0 && !math.IsInf(ys[i], 0) && !math.IsNaN(ys[i]) {
			lx, ly = append(lx, math.Log(xs[i])), append(ly, math.Log(ys[i]))
		}
	}
	if len(lx) < 2 {
		return math.NaN()
	}
	_, slope := stat.LinearRegression(lx, ly, nil, false)
	return slope
}

// column is a figure's values over a sweep, with the axis's xs.
func column(sw sweep, f figure) (xs, ys []float64) {
	for _, p := range sw.points {
		xs, ys = append(xs, float64(p.x)), append(ys, f.of(p))
	}
	return xs, ys
}

func printSweep(out io.Writer, sw sweep) {
	fmt.Fprintf(out, "\n%s (x: %s)\n", sw.axis.name, sw.axis.unit)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(w, "x\tendpoints\t")
	for _, f := range figures {
		fmt.Fprintf(w, "%s %s\t", f.name, f.unit)
	}
	fmt.Fprintln(w)
	for _, p := range sw.points {
		fmt.Fprintf(w, "%d\t%d\t", p.x, p.endpoints)
		for _, f := range figures {
			fmt.Fprintf(w, "%s\t", format(f.of(p)))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "growth exponent\t\t")
	for _, f := range figures {
		xs, ys := column(sw, f)
		fmt.Fprintf(w, "%s\t", format(growthExponent(xs, ys)))
	}
	fmt.Fprintln(w)
	w.Flush()
}

func format(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// printTargets checks the growth targets on the sweeps that reach them
// and reports whether every one checked holds.
func printTargets(out io.Writer, sweeps []sweep, sample time.Duration) bool {
	ok := true
	verdict := func(held bool) string {
		if held {
			return "ok"
		}
		ok = false
		return "MISS"
	}
	fmt.Fprintln(out)
	for _, sw := range sweeps {
		switch sw.axis.kind {
		case "endpoints":
			at10, atMost := pointAt(sw, 10), largest(sw)
			if at10 == nil || atMost == nil || atMost.x < 1000 {
				fmt.Fprintln(out, "target: setup per endpoint at 1000 within 1.5x of that at 10: not measured (needs -endpoints with 10 and 1000 or more)")
				continue
			}
			per := figures[1].of
			r := per(*atMost) / per(*at10)
			fmt.Fprintf(out, "target (%s): setup per endpoint at %d within 1.5x of that at 10: %.2f ms / %.2f ms = %.2fx %s\n",
				sw.axis.name, atMost.x, per(*atMost), per(*at10), r, verdict(r <= 1.5))
		case "flows":
			p := pointAt(sw, 1024)
			if p == nil {
				fmt.Fprintln(out, "target: time around a sample of 1024 flows below the sample: not measured (needs -flows with 1024)")
				continue
			}
			around := time.Duration(figures[3].of(*p)) * time.Millisecond
			fmt.Fprintf(out, "target (%s): time around a sample of 1024 flows below the sample: %v around a %v sample %s\n",
				sw.axis.name, around, sample, verdict(around < sample))
		}
	}
	return ok
}

func pointAt(sw sweep, x int) *point {
	for i := range sw.points {
		if sw.points[i].x == x {
			return &sw.points[i]
		}
	}
	return nil
}

func largest(sw sweep) *point {
	var best *point
	for i := range sw.points {
		if best == nil || sw.points[i].x > best.x {
			best = &sw.points[i]
		}
	}
	return best
}
