package stats

import (
	"math"
	"testing"
)

func near(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol
}

func TestSummarizeEmpty(t *testing.T) {
	if got := Summarize(nil); got != (Summary{}) {
		t.Fatalf("Summarize(nil) = %+v, want zero Summary", got)
	}
}

func TestSummarizeSingle(t *testing.T) {
	got := Summarize([]float64{7.5})
	want := Summary{Mean: 7.5, Min: 7.5, Max: 7.5, CI95Low: 7.5, CI95High: 7.5, N: 1}
	if got != want {
		t.Fatalf("Summarize([7.5]) = %+v, want %+v", got, want)
	}
}

// The expected intervals use published two-sided 95% t quantiles:
// t(0.975, 1) = 12.7062, t(0.975, 2) = 4.3027, t(0.975, 4) = 2.7764,
// t(0.975, 9) = 2.2622.
func TestSummarizeKnownValues(t *testing.T) {
	tests := []struct {
		name      string
		xs        []float64
		mean, sd  float64
		min, max  float64
		half      float64
		tolerance float64
	}{
		{
			name: "two values", xs: []float64{1, 3},
			// sd = sqrt(((1-2)^2+(3-2)^2)/1) = sqrt(2); half = 12.7062*sqrt(2)/sqrt(2)
			mean: 2, sd: math.Sqrt2, min: 1, max: 3, half: 12.7062, tolerance: 1e-3,
		},
		{
			name: "three values", xs: []float64{10, 12, 14},
			// sd = sqrt((4+0+4)/2) = 2; half = 4.3027*2/sqrt(3) = 4.9683
			mean: 12, sd: 2, min: 10, max: 14, half: 4.9683, tolerance: 1e-3,
		},
		{
			name: "five values", xs: []float64{2, 4, 4, 4, 6},
			// sd = sqrt((4+0+0+0+4)/4) = sqrt(2); half = 2.7764*sqrt(2)/sqrt(5) = 1.7560
			mean: 4, sd: math.Sqrt2, min: 2, max: 6, half: 1.7560, tolerance: 1e-3,
		},
		{
			name: "ten values", xs: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
			// sd = sqrt(82.5/9) = 3.02765; half = 2.2622*3.02765/sqrt(10) = 2.1659
			mean: 5.5, sd: 3.027650, min: 1, max: 10, half: 2.1659, tolerance: 1e-3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.xs)
			if got.N != len(tt.xs) {
				t.Errorf("N = %d, want %d", got.N, len(tt.xs))
			}
			if !near(got.Mean, tt.mean, 1e-12) {
				t.Errorf("Mean = %v, want %v", got.Mean, tt.mean)
			}
			if !near(got.Stddev, tt.sd, 1e-6) {
				t.Errorf("Stddev = %v, want %v", got.Stddev, tt.sd)
			}
			if got.Min != tt.min || got.Max != tt.max {
				t.Errorf("Min, Max = %v, %v, want %v, %v", got.Min, got.Max, tt.min, tt.max)
			}
			if !near(got.CI95Low, tt.mean-tt.half, tt.tolerance) || !near(got.CI95High, tt.mean+tt.half, tt.tolerance) {
				t.Errorf("CI = [%v, %v], want [%v, %v]", got.CI95Low, got.CI95High, tt.mean-tt.half, tt.mean+tt.half)
			}
			if !near(got.CIHalfWidth(), tt.half, tt.tolerance) {
				t.Errorf("CIHalfWidth = %v, want %v", got.CIHalfWidth(), tt.half)
			}
		})
	}
}

func TestSummarizeIdenticalValues(t *testing.T) {
	got := Summarize([]float64{5, 5, 5, 5})
	if got.Stddev != 0 || got.CI95Low != 5 || got.CI95High != 5 {
		t.Fatalf("Summarize of identical values = %+v, want zero spread around 5", got)
	}
}

// Large values with a tiny spread are the normal case for throughput in
// bit/s; the result must keep the spread's digits.
func TestSummarizeLargeValuesKeepPrecision(t *testing.T) {
	got := Summarize([]float64{1e10 + 1, 1e10 + 2, 1e10 + 3})
	if !near(got.Stddev, 1, 1e-6) {
		t.Fatalf("Stddev = %v, want 1", got.Stddev)
	}
}

func TestSummarizeDoesNotReorderInput(t *testing.T) {
	xs := []float64{3, 1, 2}
	Summarize(xs)
	if xs[0] != 3 || xs[1] != 1 || xs[2] != 2 {
		t.Fatalf("input changed to %v", xs)
	}
}

func TestMedianByHand(t *testing.T) {
	xs := []float64{5, 1, 4, 2}
	if got := Median(xs); got != 3 {
		t.Errorf("median of 5 1 4 2 = %v, want 3", got)
	}
	if xs[0] != 5 {
		t.Errorf("median reordered its input: %v", xs)
	}
	if got := Median([]float64{7, -1, 3}); got != 3 {
		t.Errorf("median of 7 -1 3 = %v, want 3", got)
	}
	if got := Median(nil); got != 0 {
		t.Errorf("median of nothing = %v, want 0", got)
	}
}
