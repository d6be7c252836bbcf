package stats

import (
	"math"
	"testing"
)

// TestPairedRatioCancelsDrift compares a mode 10% slower than its
// baseline on a machine whose speed drifts by half over the run: sample
// by sample the ratio is 0.9 throughout, so the paired interval is tight
// around it, while the unpaired one, which sees only the spread, is wide.
func TestPairedRatioCancelsDrift(t *testing.T) {
	var host, mode []float64
	for i := range 8 {
		speed := 10e9 * (1 - 0.5*float64(i)/7)
		host = append(host, speed)
		mode = append(mode, 0.9*speed*(1+0.001*float64(i%2)))
	}
	p := PairedRatio(mode, host)
	if math.Abs(p.Ratio-0.9) > 0.001 || p.CI95High-p.CI95Low > 0.002 || !p.Significant() || !p.Paired || p.N != 8 {
		t.Errorf("paired: %+v, want 0.9 with a tight interval", p)
	}
	u := UnpairedRatio(mode, host)
	if math.Abs(u.Ratio-0.9) > 0.01 || u.CI95High-u.CI95Low < 0.2 || u.Significant() {
		t.Errorf("unpaired: %+v, want about 0.9 with an interval that holds 1", u)
	}
}

// TestRatioIntervalByHand checks intervals computed by hand: a constant
// ratio has none; the ratios 1 and 4 have log mean ln 2 and an interval
// of Student's t with one degree of freedom (12.706) times ln 2 either
// side of it.
func TestRatioIntervalByHand(t *testing.T) {
	r := PairedRatio([]float64{2, 4, 6}, []float64{1, 2, 3})
	if r.Ratio != 2 || r.CI95Low != 2 || r.CI95High != 2 {
		t.Errorf("constant ratio 2: %+v", r)
	}
	r = PairedRatio([]float64{1, 4}, []float64{1, 1})
	// logs 0 and ln 4: mean ln 2, sd ln4/√2, half-width 12.706·(ln4/√2)/√2 = 12.706·ln2.
	half := 12.7062 * math.Ln2
	if math.Abs(r.Ratio-2) > 1e-9 || math.Abs(math.Log(r.CI95High)-(math.Ln2+half)) > 1e-3 || math.Abs(math.Log(r.CI95Low)-(math.Ln2-half)) > 1e-3 {
		t.Errorf("ratios 1 and 4: %+v", r)
	}
	if r.Significant() {
		t.Error("two ratios as far apart as 1 and 4 are not a significant difference")
	}
	if z := PairedRatio([]float64{0, math.NaN()}, []float64{1, 1}); z.N != 0 {
		t.Errorf("no usable pair: %+v", z)
	}
}
