package main

import (
	"math"
	"testing"
)

// TestGrowthExponentIsTheLogLogSlope fits figures of known growth: a
// square, a constant and a square root, with a point that has no value
// (NaN) and one at zero, which the fit must leave out.
func TestGrowthExponentIsTheLogLogSlope(t *testing.T) {
	xs := []float64{1, 10, 100, 1000, 5, 7}
	for _, tc := range []struct {
		f    func(x float64) float64
		want float64
	}{
		{func(x float64) float64 { return 3 * x * x }, 2},
		{func(x float64) float64 { return 42 }, 0},
		{func(x float64) float64 { return math.Sqrt(x) }, 0.5},
	} {
		ys := make([]float64, len(xs))
		for i, x := range xs {
			ys[i] = tc.f(x)
		}
		ys[4], ys[5] = math.NaN(), 0
		if got := growthExponent(xs, ys); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("exponent %v, want %v", got, tc.want)
		}
	}
	if got := growthExponent([]float64{1, 2}, []float64{1, math.NaN()}); !math.IsNaN(got) {
		t.Errorf("one point: %v, want NaN", got)
	}
}
