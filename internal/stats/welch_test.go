package stats

import (
	"math"
	"testing"
)

// The expected values are worked by hand from the definitions; the
// p-values by Simpson integration of the t density, independently of
// gonum.
func TestWelchKnownValues(t *testing.T) {
	tests := []struct {
		name     string
		a, b     []float64
		t, df, p float64
	}{
		{
			// means 12 and 15.4, variances 2.5 and 1.3: se² = 0.5 + 0.26,
			// t = 3.4/sqrt(0.76), df = 0.76²/(0.5²/4 + 0.26²/4)
			name: "clear difference", a: []float64{10, 11, 12, 13, 14}, b: []float64{14, 15, 15, 16, 17},
			t: 3.900067, df: 7.274559, p: 0.0054702,
		},
		{
			// means 10.05 and 10.0333, nearly equal
			name: "no difference", a: []float64{9, 10, 11, 10.2}, b: []float64{9.5, 10.5, 10.1},
			t: -0.033095, df: 4.908111, p: 0.974902,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WelchTest(tt.a, tt.b)
			if !near(got.T, tt.t, 1e-3) || !near(got.DF, tt.df, 1e-3) || !near(got.P, tt.p, 1e-4) {
				t.Fatalf("WelchTest = %+v, want t %v df %v p %v", got, tt.t, tt.df, tt.p)
			}
		})
	}
}

func TestWelchSymmetry(t *testing.T) {
	a, b := []float64{1, 2, 3, 4}, []float64{3, 5, 4, 6, 7}
	ab, ba := WelchTest(a, b), WelchTest(b, a)
	if !near(ab.T, -ba.T, 1e-12) || !near(ab.P, ba.P, 1e-12) {
		t.Fatalf("WelchTest(a, b) = %+v, WelchTest(b, a) = %+v: not mirror images", ab, ba)
	}
}

func TestWelchDegenerate(t *testing.T) {
	if got := WelchTest([]float64{1}, []float64{2, 3}); !math.IsNaN(got.P) {
		t.Errorf("one value on a side: p = %v, want NaN", got.P)
	}
	if got := WelchTest([]float64{5, 5}, []float64{5, 5, 5}); got.P != 1 {
		t.Errorf("identical constants: p = %v, want 1", got.P)
	}
	if got := WelchTest([]float64{5, 5}, []float64{6, 6}); got.P != 0 || got.T <= 0 {
		t.Errorf("different constants: %+v, want p 0 and positive t", got)
	}
}
