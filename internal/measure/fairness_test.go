package measure

import (
	"math"
	"testing"

	"cnbench/internal/model"
	"cnbench/internal/workload"
)

// TestJainByHand holds fairness_jain to (Σx)² / (n·Σx²) worked out by
// hand on fixed per-endpoint rates, through the sample a pattern's
// exchange becomes.
func TestJainByHand(t *testing.T) {
	for _, tc := range []struct {
		rates []float64
		want  float64
		why   string
	}{
		{[]float64{3e9, 3e9, 3e9}, 1, "equal shares: 81/(3·27)"},
		{[]float64{1e9, 2e9, 3e9, 4e9}, 100.0 / 120, "100/(4·30)"},
		{[]float64{2e9, 1e9}, 0.9, "9/(2·5)"},
		{[]float64{8e9, 0, 0, 0}, 0.25, "one takes all: 64/(4·64) = 1/n"},
		{[]float64{1e9, 1e9, 4e9}, 36.0 / 54, "36/(3·18)"},
	} {
		var sum float64
		for _, r := range tc.rates {
			sum += r
		}
		x := Exchange{ReceivedBytes: int64(sum / 8), ReceiveTime: 1e9, ThroughputBPS: sum, PerEndpoint: tc.rates}
		before, after := readings()
		s, err := sampleFrom(model.Case{Workload: workload.TCPStream}, before, after, x, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Values[model.FairnessJain]; math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("rates %v: fairness %.6f, want %.6f (%s)", tc.rates, got, tc.want, tc.why)
		}
		if got, want := s.Values[model.ThroughputPerEndpointBPS], sum/float64(len(tc.rates)); math.Abs(got-want) > 1e-3 {
			t.Errorf("rates %v: %.0f bit/s per endpoint, want %.0f", tc.rates, got, want)
		}
	}
}
