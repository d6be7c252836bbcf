// Package stats summarises repeated measurements: mean, spread and a 95%
// confidence interval for the mean. Benchmarks repeat each case only a
// handful of times, so the interval uses Student's t distribution rather
// than the normal approximation, which would be far too narrow at n=3.
package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Summary describes a set of measurements of one quantity.
type Summary struct {
	Mean   float64
	Stddev float64 // sample standard deviation (n-1 denominator)
	Min    float64
	Max    float64
	// CI95Low and CI95High bound the 95% confidence interval of the mean.
	CI95Low  float64
	CI95High float64
	N        int
}

// CIHalfWidth is the distance from the mean to either end of the 95%
// confidence interval, the "±" a table prints.
func (s Summary) CIHalfWidth() float64 {
	return (s.CI95High - s.CI95Low) / 2
}

// Summarize computes the Summary of xs. An empty slice gives the zero
// Summary; a single value gives a zero spread and a degenerate interval
// at the value, since one measurement says nothing about its own
// variability. Non-finite inputs propagate into the result; callers that
// may hold them must filter first.
func Summarize(xs []float64) Summary {
	n := len(xs)
	if n == 0 {
		return Summary{}
	}
	s := Summary{N: n, Min: xs[0], Max: xs[0]}
	var sum float64
	for _, x := range xs {
		sum += x
		s.Min = math.Min(s.Min, x)
		s.Max = math.Max(s.Max, x)
	}
	s.Mean = sum / float64(n)
	if n == 1 {
		s.CI95Low, s.CI95High = s.Mean, s.Mean
		return s
	}
	// Two passes over the deviations rather than the sum-of-squares
	// shortcut: throughputs around 1e10 with small spread would lose every
	// significant digit to cancellation.
	var squares float64
	for _, x := range xs {
		d := x - s.Mean
		squares += d * d
	}
	s.Stddev = math.Sqrt(squares / float64(n-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
	half := t * s.Stddev / math.Sqrt(float64(n))
	s.CI95Low, s.CI95High = s.Mean-half, s.Mean+half
	return s
}

// Median of xs, or 0 if there are none; xs is left as it was.
func Median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[n/2]
}
