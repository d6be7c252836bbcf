package validate

import (
	"math"
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
		caseWith("bridge", "tcp_stream", "iperf3", model.ThroughputBPS, 20.5e9, 21.2e9, 19.8e9),
		caseWith("bridge", "tcp_rr", "native", model.LatencyMeanUS, 10, 12, 11),
		caseWith("bridge", "tcp_rr", "sockperf", model.LatencyMeanUS, 15, 14, 16),
	}}
	got := map[string]Check{}
	for _, c := range Compare(res, DefaultThresholds) {
		got[c.What] = c
	}
	tp := got["throughput native/iperf3"]
	if want := math.Cbrt(20 / 20.5 * 21 / 21.2 * 19 / 19.8); math.Abs(tp.Ratio-want) > 1e-12 || !tp.OK() || !(tp.Low < tp.Ratio && tp.Ratio < tp.High) {
		t.Errorf("throughput: ratio %v in [%v, %v] ok %v; the turns agree within 5%%", tp.Ratio, tp.Low, tp.High, tp.OK())
	}
	lat := got["tcp mean round trip native/sockperf"]
	if want := math.Cbrt(10.0 / 15 * 12.0 / 14 * 11.0 / 16); math.Abs(lat.Ratio-want) > 1e-12 || lat.OK() {
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

func TestPairedRatiosFollowTheTurns(t *testing.T) {
	// Sample i of each engine ran side by side: a drift common to both
	// cancels in the per-turn ratios, so the interval is tight although
	// each engine's own samples spread widely.
	s, ok := pairedRatios([]float64{10, 20, 30, 40}, []float64{10.1, 20.1, 30.4, 40.4})
	if !ok || !(s.Low > 0.98 && s.High < 1 && s.Low < s.Ratio && s.Ratio < s.High) {
		t.Errorf("ratio %v in %v-%v, want about 0.990 on both sides", s.Ratio, s.Low, s.High)
	}
	if _, ok := pairedRatios([]float64{10}, []float64{10}); ok {
		t.Error("one pair gave an interval")
	}
	// Unpaired extras are left out rather than matched with nothing.
	if s, ok := pairedRatios([]float64{10, 10, 99}, []float64{5, 5}); !ok || math.Abs(s.Ratio-2) > 1e-12 || math.Abs(s.Low-2) > 1e-12 || math.Abs(s.High-2) > 1e-12 {
		t.Errorf("ratio %v in %v-%v, want exactly 2", s.Ratio, s.Low, s.High)
	}
}

func TestPairedRatiosAreSymmetric(t *testing.T) {
	// One turn where native ran 25% faster and one where it ran 20%
	// slower: the engines are even, whichever is divided by which. The
	// arithmetic mean of the ratios would say each is 1.7% ahead of the
	// other.
	native, iperf3 := []float64{12.5, 8, 10}, []float64{10, 10, 10}
	fwd, ok1 := pairedRatios(native, iperf3)
	rev, ok2 := pairedRatios(iperf3, native)
	if !ok1 || !ok2 || math.Abs(fwd.Ratio-1) > 1e-12 || math.Abs(rev.Ratio-1) > 1e-12 {
		t.Errorf("ratios %v and %v, want 1 both ways", fwd.Ratio, rev.Ratio)
	}
	if math.Abs(fwd.Low*rev.High-1) > 1e-12 || math.Abs(fwd.High*rev.Low-1) > 1e-12 {
		t.Errorf("intervals [%v, %v] and [%v, %v] are not reciprocal", fwd.Low, fwd.High, rev.Low, rev.High)
	}
}

func TestSettledNeedsTheWholeIntervalOnOneSide(t *testing.T) {
	for _, tc := range []struct {
		ratio, low, high float64
		settled          bool
	}{
		{1.02, 0.99, 1.05, true},  // within the 10% band throughout
		{1.02, 0.95, 1.15, false}, // agrees, but the interval reaches past the band
		{1.30, 1.20, 1.40, true},  // beyond the band throughout
		{1.12, 1.05, 1.19, false}, // disagrees, but the interval reaches into the band
		{0.80, 0.75, 0.85, true},  // beyond, on the other side
		{1.02, 0, 0, false},       // one pair: no interval yet
	} {
		c := Check{Ratio: tc.ratio, Low: tc.low, High: tc.high, Limit: 0.10}
		if got := c.Settled(); got != tc.settled {
			t.Errorf("ratio %v in [%v, %v]: settled %v, want %v", tc.ratio, tc.low, tc.high, got, tc.settled)
		}
	}
	if (Check{Ratio: 1, Low: 1, High: 1, Missing: "sockperf is not installed"}).Settled() {
		t.Error("a missing comparison was settled")
	}
}

func TestDecideComparesThePathsEngines(t *testing.T) {
	decide := Decide(DefaultThresholds)
	sampled := func(workload, engine string, values ...float64) (*model.Case, []model.Sample) {
		c := caseWith("veth", workload, engine, model.ThroughputBPS, values...)
		return &c.Case, c.Samples
	}
	run := func(a, b []float64) bool {
		ca, sa := sampled("tcp_stream", "native", a...)
		cb, sb := sampled("tcp_stream", "iperf3", b...)
		return decide([]*model.Case{ca, cb}, [][]model.Sample{sa, sb})
	}
	if !run([]float64{20, 21, 19}, []float64{20.1, 21.1, 19.1}) {
		t.Error("turns within 1% of each other were not settled")
	}
	if run([]float64{20, 25, 17}, []float64{21, 20, 20}) {
		t.Error("turns 6% apart on average, spread by 20%, were settled")
	}
	if !run([]float64{10, 10.5, 9.5}, []float64{20, 21, 19}) {
		t.Error("turns half as fast throughout were not settled")
	}
	// A path without its reference engine has nothing to decide.
	ca, sa := sampled("tcp_stream", "native", 20, 20, 20)
	if decide([]*model.Case{ca}, [][]model.Sample{sa}) {
		t.Error("decided without a reference engine")
	}
}

// TestReferencesAreJudgedTogether holds the native engine to the span of
// the references: iperf3 alone 10% behind both netperf and the native
// engine is iperf3's own doing, a native engine between the two agrees,
// and one beyond both by more than the threshold does not.
func TestReferencesAreJudgedTogether(t *testing.T) {
	stream := func(native, iperf3, netperf []float64) map[string]Check {
		res := &model.RunResult{Cases: []model.CaseResult{
			caseWith("bridge", "tcp_stream", "native", model.ThroughputBPS, native...),
			caseWith("bridge", "tcp_stream", "iperf3", model.ThroughputBPS, iperf3...),
		}}
		if netperf != nil {
			res.Cases = append(res.Cases, caseWith("bridge", "tcp_stream", "netperf", model.ThroughputBPS, netperf...))
		}
		got := map[string]Check{}
		for _, c := range Compare(res, DefaultThresholds) {
			got[c.What] = c
		}
		return got
	}
	native := []float64{24, 24.2, 23.8, 24.1, 23.9}
	slow := []float64{21.8, 22, 21.6, 21.9, 21.7}     // 10% behind
	same := []float64{24.1, 24.1, 23.9, 24, 24}       // within 1%
	lower := []float64{22.6, 22.8, 22.4, 22.7, 22.5}  // 6% behind
	higher := []float64{25.6, 25.8, 25.4, 25.7, 25.5} // 6% ahead

	got := stream(native, slow, same)
	ip, np := got["throughput native/iperf3"], got["throughput native/netperf"]
	if !np.Within() || !np.Settled() || np.By != "" {
		t.Errorf("netperf within 1%%: %+v", np)
	}
	if ip.Within() || !ip.OK() || ip.By != "netperf" || ip.Between || !ip.Settled() {
		t.Errorf("iperf3 10%% behind while netperf agrees: ok %v by %q between %v settled %v", ip.OK(), ip.By, ip.Between, ip.Settled())
	}

	got = stream(native, lower, higher)
	ip, np = got["throughput native/iperf3"], got["throughput native/netperf"]
	if !ip.OK() || !np.OK() || !ip.Between || !np.Between || ip.By != "netperf" || np.By != "iperf3" || !ip.Settled() {
		t.Errorf("native between iperf3 (-6%%) and netperf (+6%%): iperf3 %+v, netperf %+v", ip, np)
	}

	got = stream(native, slow, lower)
	if ip, np := got["throughput native/iperf3"], got["throughput native/netperf"]; ip.OK() || np.OK() {
		t.Errorf("native 6%% and 10%% ahead of both references passed: iperf3 ok %v, netperf ok %v", ip.OK(), np.OK())
	}

	got = stream(native, slow, nil)
	if ip := got["throughput native/iperf3"]; ip.OK() || !ip.Settled() || got["throughput native/netperf"].Missing == "" {
		t.Errorf("iperf3 alone 10%% behind: ok %v settled %v; netperf's check %+v", ip.OK(), ip.Settled(), got["throughput native/netperf"])
	}

	// iperf3 within 5% but spread too widely to say so for sure, where
	// netperf agrees for sure: the metric's verdict is settled.
	wide := []float64{21.5, 25.5, 22, 25, 22.5}
	got = stream(native, wide, same)
	if ip := got["throughput native/iperf3"]; !ip.Within() || ip.By != "netperf" || !ip.Settled() {
		t.Errorf("iperf3 %.3f [%.3f, %.3f] beside a settled netperf: by %q settled %v", ip.Ratio, ip.Low, ip.High, ip.By, ip.Settled())
	}

	// The stopping rule sees the same: settled once the span vouches.
	decide := Decide(DefaultThresholds)
	var cases []*model.Case
	var samples [][]model.Sample
	for engine, xs := range map[string][]float64{"native": native, "iperf3": slow, "netperf": same} {
		c := caseWith("bridge", "tcp_stream", engine, model.ThroughputBPS, xs...)
		cases, samples = append(cases, &c.Case), append(samples, c.Samples)
	}
	if !decide(cases, samples) {
		t.Error("a path where netperf vouches for the native engine was not settled")
	}
}
