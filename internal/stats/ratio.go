package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Ratio is how one set of measurements compares with a baseline: the
// geometric mean of their ratios and its 95% confidence interval.
type Ratio struct {
	Ratio, CI95Low, CI95High float64
	// N is the number of ratios it rests on.
	N int
	// Paired says the ratios are of samples taken side by side (sample i
	// over baseline sample i); otherwise every sample is over the
	// baseline's mean, and the interval holds both sides' spread.
	Paired bool
}

// Significant reports whether the interval excludes 1: the two differ
// beyond the noise the samples show.
func (r Ratio) Significant() bool {
	return r.N >= 2 && (r.CI95Low > 1 || r.CI95High < 1)
}

// PairedRatio compares xs with the baseline ys sample by sample: sample i
// of each was taken side by side, so drift over the run cancels in their
// ratio. The interval is Student's t over the logs of the ratios, which
// makes it symmetric for a mode twice as fast and one half as fast. Pairs
// with a non-positive or non-finite value are left out; fewer than one
// pair gives the zero Ratio.
func PairedRatio(xs, ys []float64) Ratio {
	var logs []float64
	for i := range min(len(xs), len(ys)) {
		if ok(xs[i]) && ok(ys[i]) {
			logs = append(logs, math.Log(xs[i]/ys[i]))
		}
	}
	return fromLogs(logs, true)
}

// UnpairedRatio compares xs with the baseline ys when their samples were
// not taken side by side: the ratio of the geometric means, with an
// interval from Welch's t over the logs of both sides.
func UnpairedRatio(xs, ys []float64) Ratio {
	lx, ly := logsOf(xs), logsOf(ys)
	if len(lx) == 0 || len(ly) == 0 {
		return Ratio{}
	}
	a, b := Summarize(lx), Summarize(ly)
	r := Ratio{Ratio: math.Exp(a.Mean - b.Mean), N: min(len(lx), len(ly))}
	if len(lx) < 2 || len(ly) < 2 {
		r.CI95Low, r.CI95High = r.Ratio, r.Ratio
		return r
	}
	w := WelchTest(lx, ly)
	if math.IsInf(w.DF, 1) { // no spread on either side
		r.CI95Low, r.CI95High = r.Ratio, r.Ratio
		return r
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: w.DF}.Quantile(0.975)
	half := t * math.Sqrt(a.Stddev*a.Stddev/float64(len(lx))+b.Stddev*b.Stddev/float64(len(ly)))
	r.CI95Low, r.CI95High = math.Exp(a.Mean-b.Mean-half), math.Exp(a.Mean-b.Mean+half)
	return r
}

func fromLogs(logs []float64, paired bool) Ratio {
	if len(logs) == 0 {
		return Ratio{}
	}
	s := Summarize(logs)
	return Ratio{Ratio: math.Exp(s.Mean), CI95Low: math.Exp(s.CI95Low), CI95High: math.Exp(s.CI95High), N: s.N, Paired: paired}
}

func logsOf(xs []float64) []float64 {
	var logs []float64
	for _, x := range xs {
		if ok(x) {
			logs = append(logs, math.Log(x))
		}
	}
	return logs
}

func ok(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }
