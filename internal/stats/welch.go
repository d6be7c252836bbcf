package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Welch is the outcome of Welch's unequal-variances t-test.
type Welch struct {
	T  float64 // the t statistic, positive when b's mean is the larger
	DF float64 // Welch–Satterthwaite degrees of freedom
	// P is the two-sided p-value; NaN when the test is undefined (fewer
	// than two values on either side).
	P float64
}

// WelchTest compares the means of a and b without assuming equal
// variances: a benchmark run on a busier day is noisier, not just slower,
// so Student's pooled test would misjudge it.
//
// With both variances zero the means are known exactly: P is 0 when they
// differ and 1 when they are equal.
func WelchTest(a, b []float64) Welch {
	sa, sb := Summarize(a), Summarize(b)
	if sa.N < 2 || sb.N < 2 {
		return Welch{T: math.NaN(), DF: math.NaN(), P: math.NaN()}
	}
	va := sa.Stddev * sa.Stddev / float64(sa.N)
	vb := sb.Stddev * sb.Stddev / float64(sb.N)
	diff := sb.Mean - sa.Mean
	if va+vb == 0 {
		if diff == 0 {
			return Welch{T: 0, DF: math.Inf(1), P: 1}
		}
		return Welch{T: math.Copysign(math.Inf(1), diff), DF: math.Inf(1), P: 0}
	}
	t := diff / math.Sqrt(va+vb)
	df := (va + vb) * (va + vb) / (va*va/float64(sa.N-1) + vb*vb/float64(sb.N-1))
	dist := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
	return Welch{T: t, DF: df, P: 2 * dist.Survival(math.Abs(t))}
}
