package main

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"cnbench/internal/model"
)

// ratio is a metric of a case against its host case: the geometric mean
// of the ratios, its 95% interval, the count it rests on, whether the
// samples were paired, and the verdict.
type ratio struct {
	r, lo, hi float64
	n         int
	paired    bool
	verdict   string
}

func (a ratio) near(b ratio) bool {
	return near(a.r, b.r) && near(a.lo, b.lo) && near(a.hi, b.hi) && a.n == b.n && a.paired == b.paired && a.verdict == b.verdict
}

// perSample gives each metric's value in each sample of c, NaN where a
// sample has none; latency comes from the sample's histogram where the
// case has histograms.
func perSample(c rawCase) map[string][]float64 {
	out := map[string][]float64{}
	set := func(name string, i int, x float64) {
		if out[name] == nil {
			out[name] = make([]float64, len(c.values))
			for j := range out[name] {
				out[name][j] = math.NaN()
			}
		}
		out[name][i] = x
	}
	fromHists := len(c.hists) > 0
	for i, v := range c.values {
		for name, x := range v {
			_, percentile := latencyQuantiles[name]
			if fromHists && (percentile || name == "latency_mean_us") || math.IsNaN(x) || math.IsInf(x, 0) {
				continue
			}
			set(name, i, x)
		}
		if h := c.sampleHists[i]; fromHists && h != nil {
			for name, q := range latencyQuantiles {
				set(name, i, float64(h.ValueAtQuantile(q))/1000)
			}
			set("latency_mean_us", i, h.Mean()/1000)
		}
	}
	return out
}

// ratios recomputes, for each metric with an overhead, the case over its
// host case: sample i over host sample i when both took turns, else the
// ratio of the geometric means with Welch's interval.
func ratios(raw []rawCase, want []map[string]summary, c rawCase) map[string]ratio {
	over, _ := overheads(raw, want, c)
	if over == nil {
		return nil
	}
	var host rawCase
	for _, h := range raw {
		if h.mode == "host" && h.topology == c.topology && h.workload == c.workload && h.engine == c.engine && sameParams(h.params, c.params) {
			host = h
			break
		}
	}
	xs, ys := perSample(c), perSample(host)
	out := map[string]ratio{}
	for name := range over {
		var r ratio
		if c.paired && host.paired {
			r = pairedRatio(xs[name], ys[name])
		} else {
			r = unpairedRatio(xs[name], ys[name])
		}
		if r.n == 0 {
			continue
		}
		r.verdict = "no significant difference"
		if r.n >= 2 && (r.lo > 1 || r.hi < 1) {
			r.verdict = "worse"
			if (r.r > 1) == model.Metrics[name].HigherIsBetter {
				r.verdict = "better"
			}
		}
		out[name] = r
	}
	return out
}

func usable(x float64) bool { return x > 0 && !math.IsNaN(x) && !math.IsInf(x, 0) }

func pairedRatio(xs, ys []float64) ratio {
	var logs []float64
	for i := 0; i < len(xs) && i < len(ys); i++ {
		if usable(xs[i]) && usable(ys[i]) {
			logs = append(logs, math.Log(xs[i]/ys[i]))
		}
	}
	if len(logs) == 0 {
		return ratio{}
	}
	s := summarise(logs)
	return ratio{r: math.Exp(s.mean), lo: math.Exp(s.lo), hi: math.Exp(s.hi), n: s.n, paired: true}
}

func unpairedRatio(xs, ys []float64) ratio {
	logs := func(vs []float64) []float64 {
		var out []float64
		for _, v := range vs {
			if usable(v) {
				out = append(out, math.Log(v))
			}
		}
		return out
	}
	lx, ly := logs(xs), logs(ys)
	if len(lx) == 0 || len(ly) == 0 {
		return ratio{}
	}
	a, b := summarise(lx), summarise(ly)
	r := ratio{r: math.Exp(a.mean - b.mean), n: min(a.n, b.n)}
	r.lo, r.hi = r.r, r.r
	va, vb := a.sd*a.sd/float64(a.n), b.sd*b.sd/float64(b.n)
	if a.n < 2 || b.n < 2 || va+vb == 0 {
		return r
	}
	// Welch–Satterthwaite degrees of freedom.
	df := (va + vb) * (va + vb) / (va*va/float64(a.n-1) + vb*vb/float64(b.n-1))
	half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975) * math.Sqrt(va+vb)
	r.lo, r.hi = math.Exp(a.mean-b.mean-half), math.Exp(a.mean-b.mean+half)
	return r
}

// overheadBar is what the overhead chart plots for a ratio: the cost in
// percent, positive when worse, with its interval.
func overheadBar(r ratio, higherIsBetter bool) plotted {
	p := plotted{0, (r.r - 1) * 100, (r.lo - 1) * 100, (r.hi - 1) * 100}
	if higherIsBetter {
		p = plotted{0, -p.Y, -p.High, -p.Low}
	}
	if r.n < 2 {
		p.Low, p.High = p.Y, p.Y
	}
	return p
}
