package validate

import (
	"testing"

	"cnbench/internal/model"
)

func caseWith(mode, workload, engine string, metric string, values ...float64) model.CaseResult {
	c := model.CaseResult{Case: model.Case{Mode: mode, Topology: "chc", Workload: workload, Engine: engine, Status: model.StatusOK}}
	for _, v := range values {
		c.Samples = append(c.Samples, model.Sample{Values: map[string]float64{metric: v, model.AppWireRatio: 1.001}})
	}
	return c
}

func TestCompareFlagsDisagreement(t *testing.T) {
	res := &model.RunResult{Cases: []model.CaseResult{
		caseWith("bridge", "tcp_stream", "native", model.ThroughputBPS, 20e9, 21e9, 19e9),
		caseWith("bridge", "tcp_stream", "iperf3", model.ThroughputBPS, 20.5e9, 30e9, 20e9),
		caseWith("bridge", "tcp_rr", "native", model.LatencyMeanUS, 10, 12, 11),
		caseWith("bridge", "tcp_rr", "sockperf", model.LatencyMeanUS, 15, 14, 16),
	}}
	got := map[string]Check{}
	for _, c := range Compare(res, DefaultThresholds) {
		got[c.What] = c
	}
	tp := got["throughput native/iperf3"]
	if tp.Ratio != 20.0/20.5 || !tp.OK() {
		t.Errorf("throughput: ratio %v ok %v; the medians agree within 5%%", tp.Ratio, tp.OK())
	}
	lat := got["tcp mean round trip native/sockperf"]
	if lat.Ratio != 11.0/15 || lat.OK() {
		t.Errorf("latency: ratio %v ok %v; 27%% apart must be flagged", lat.Ratio, lat.OK())
	}
	if w := got["received bytes/wire payload, iperf3"]; !w.OK() || w.Missing != "" {
		t.Errorf("wire check %+v", w)
	}
}

func TestCompareSaysWhatIsMissing(t *testing.T) {
	skipped := caseWith("nat", "tcp_rr", "sockperf", model.LatencyMeanUS)
	skipped.Status, skipped.Reason = model.StatusSkipped, "sockperf is not installed"
	res := &model.RunResult{Cases: []model.CaseResult{
		caseWith("nat", "tcp_rr", "native", model.LatencyMeanUS, 10),
		skipped,
	}}
	for _, c := range Compare(res, DefaultThresholds) {
		if c.What == "tcp mean round trip native/sockperf" && c.Missing == "" {
			t.Errorf("missing comparison not explained: %+v", c)
		}
	}
}

func TestPairedIntervalFollowsTheTurns(t *testing.T) {
	// Sample i of each engine ran side by side: a drift common to both
	// cancels in the per-turn ratios, so the interval is tight although
	// each engine's own samples spread widely.
	low, high := pairedInterval([]float64{10, 20, 30, 40}, []float64{10.1, 20.1, 30.4, 40.4})
	if !(low > 0.98 && high < 1 && low < high) {
		t.Errorf("interval %v-%v, want about 0.990 on both sides", low, high)
	}
	if low, high := pairedInterval([]float64{10}, []float64{10}); low != 0 || high != 0 {
		t.Errorf("one pair gave an interval %v-%v", low, high)
	}
	// Unpaired extras are left out rather than matched with nothing.
	if low, high := pairedInterval([]float64{10, 10, 99}, []float64{5, 5}); low != 2 || high != 2 {
		t.Errorf("interval %v-%v, want exactly 2", low, high)
	}
}
