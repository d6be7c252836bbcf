package validate

import (
	"math"
	"strings"
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

// byWhat indexes checks by what they check.
func byWhat(checks []Check) map[string]Check {
	got := map[string]Check{}
	for _, c := range checks {
		got[c.What] = c
	}
	return got
}

func TestCompareFlagsDisagreement(t *testing.T) {
	res := &model.RunResult{Cases: []model.CaseResult{
		caseWith("bridge", "tcp_stream", "native", model.ThroughputBPS, 20e9, 21e9, 19e9),
		caseWith("bridge", "tcp_stream", "iperf3", model.ThroughputBPS, 20.5e9, 21.2e9, 19.8e9),
		caseWith("bridge", "tcp_rr", "native", model.LatencyMeanUS, 10, 12, 11, 10.5, 11.5),
		caseWith("bridge", "tcp_rr", "sockperf", model.LatencyMeanUS, 15, 14, 16, 14.5, 15.5),
	}}
	got := byWhat(Compare(res, DefaultThresholds))
	tp := got["throughput native/iperf3"]
	if want := math.Cbrt(20 / 20.5 * 21 / 21.2 * 19 / 19.8); math.Abs(tp.Ratio-want) > 1e-12 || !tp.OK() || !(tp.Low < tp.Ratio && tp.Ratio < tp.High) {
		t.Errorf("throughput: ratio %v in [%v, %v] ok %v; the turns agree within 5%%", tp.Ratio, tp.Low, tp.High, tp.OK())
	}
	lat := got["tcp mean round trip native/sockperf"]
	if want := math.Pow(10.0/15*12.0/14*11.0/16*10.5/14.5*11.5/15.5, 1.0/5); math.Abs(lat.Ratio-want) > 1e-12 || lat.OK() || !lat.Failed() {
		t.Errorf("latency: ratio %v in [%v, %v] ok %v; 26%% apart throughout must fail", lat.Ratio, lat.Low, lat.High, lat.OK())
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

// TestReferencesAreJudgedTogether holds the native engine's round trip
// to the span of the references: sockperf alone 10% off both netperf and
// the native engine is sockperf's own doing, a native engine between the
// two agrees, and one beyond both by more than the threshold does not.
func TestReferencesAreJudgedTogether(t *testing.T) {
	th := Thresholds{Throughput: 0.05, Latency: 0.05, Wire: 0.02}
	rr := func(native, sockperf, netperf []float64) map[string]Check {
		res := &model.RunResult{Cases: []model.CaseResult{
			caseWith("bridge", "tcp_rr", "native", model.LatencyMeanUS, native...),
			caseWith("bridge", "tcp_rr", "sockperf", model.LatencyMeanUS, sockperf...),
		}}
		if netperf != nil {
			res.Cases = append(res.Cases, caseWith("bridge", "tcp_rr", "netperf", model.LatencyMeanUS, netperf...))
		}
		return byWhat(Compare(res, th))
	}
	const sp, np = "tcp mean round trip native/sockperf", "tcp mean round trip native/netperf"
	native := []float64{24, 24.2, 23.8, 24.1, 23.9}
	slow := []float64{21.8, 22, 21.6, 21.9, 21.7}     // 10% shorter
	same := []float64{24.1, 24.1, 23.9, 24, 24}       // within 1%
	lower := []float64{22.6, 22.8, 22.4, 22.7, 22.5}  // 6% shorter
	higher := []float64{25.6, 25.8, 25.4, 25.7, 25.5} // 6% longer

	got := rr(native, slow, same)
	s, n := got[sp], got[np]
	if !n.Within() || !n.Settled() || n.By != "" {
		t.Errorf("netperf within 1%%: %+v", n)
	}
	if s.Within() || !s.OK() || s.By != "netperf" || s.Between || !s.Settled() || s.Verdict() != "agree: within netperf" {
		t.Errorf("sockperf 10%% off while netperf agrees: ok %v by %q between %v settled %v: %s", s.OK(), s.By, s.Between, s.Settled(), s.Verdict())
	}

	got = rr(native, lower, higher)
	s, n = got[sp], got[np]
	if !s.OK() || !n.OK() || !s.Between || !n.Between || s.By != "netperf" || n.By != "sockperf" || !s.Settled() {
		t.Errorf("native between sockperf (-6%%) and netperf (+6%%): sockperf %+v, netperf %+v", s, n)
	}

	got = rr(native, slow, lower)
	if s, n := got[sp], got[np]; s.OK() || n.OK() || !strings.HasPrefix(s.Verdict(), "FAIL comparability: native 10.") {
		t.Errorf("native 6%% and 10%% longer than both references passed: sockperf ok %v (%s), netperf ok %v", s.OK(), s.Verdict(), n.OK())
	}

	got = rr(native, slow, nil)
	if s := got[sp]; s.OK() || !s.Settled() || got[np].Missing == "" {
		t.Errorf("sockperf alone 10%% off: ok %v settled %v; netperf's check %+v", s.OK(), s.Settled(), got[np])
	}

	// sockperf within 5% but spread too widely to say so for sure, where
	// netperf agrees for sure: the metric's verdict is settled.
	wide := []float64{21.5, 25.5, 22, 25, 22.5}
	got = rr(native, wide, same)
	if s := got[sp]; !s.Within() || s.By != "netperf" || !s.Settled() {
		t.Errorf("sockperf %.3f [%.3f, %.3f] beside a settled netperf: by %q settled %v", s.Ratio, s.Low, s.High, s.By, s.Settled())
	}

	// The stopping rule sees the same: settled once the span vouches.
	decide := Decide(th)
	var cases []*model.Case
	var samples [][]model.Sample
	for engine, xs := range map[string][]float64{"native": native, "sockperf": slow, "netperf": same} {
		c := caseWith("bridge", "tcp_rr", engine, model.LatencyMeanUS, xs...)
		cases, samples = append(cases, &c.Case), append(samples, c.Samples)
	}
	if !decide(cases, samples) {
		t.Error("a path where netperf vouches for the native engine was not settled")
	}
}

// TestThroughputIsOneSided fails the native engine only when it is
// slower than a reference, and so than the fastest one; faster, it is
// reported with every engine's CPU and passes.
func TestThroughputIsOneSided(t *testing.T) {
	stream := func(native, iperf3, netperf []float64, refCPU float64) map[string]Check {
		withCPU := func(engine string, cpu float64, xs []float64) model.CaseResult {
			c := caseWith("veth", "tcp_stream", engine, model.ThroughputBPS, xs...)
			for _, s := range c.Samples {
				s.Values[model.CPUSenderPct], s.Values[model.CPUReceiverPct] = cpu, cpu-20
			}
			return c
		}
		res := &model.RunResult{Cases: []model.CaseResult{
			withCPU("native", 97, native), withCPU("iperf3", refCPU, iperf3), withCPU("netperf", refCPU, netperf),
		}}
		return byWhat(Compare(res, DefaultThresholds))
	}
	const ip, np = "throughput native/iperf3", "throughput native/netperf"
	native := []float64{24, 24.2, 23.8, 24.1, 23.9}
	behind := []float64{20.2, 20.3, 20, 20.2, 20.1}    // native 19% ahead
	ahead := []float64{26.4, 26.7, 26.1, 26.5, 26.3}   // native 9% behind
	closeBy := []float64{24.5, 24.6, 24.2, 24.6, 24.3} // native 2% behind

	got := stream(native, behind, behind, 99)
	c := got[ip]
	if c.Kind != Comparability || !c.OK() || !c.Faster() || !c.Settled() || c.Reference.Sender != 99 || c.Native.Receiver != 77 {
		t.Errorf("native 19%% ahead of both: %+v", c)
	}
	if v := c.Verdict(); v != "native faster: reference CPU-bound (iperf3 sender 99%, receiver 79%; native 97%, 77% of a core)" {
		t.Errorf("verdict %q", v)
	}
	if v := stream(native, behind, behind, 60)[np].Verdict(); !strings.HasPrefix(v, "native faster: reference below a core (netperf sender 60%") {
		t.Errorf("a reference at 60%% of a core: %q", v)
	}

	// Between the two, but 9% behind the fastest: the native engine is
	// the bottleneck there, whatever the slower reference says.
	got = stream(native, behind, ahead, 99)
	if c := got[np]; c.OK() || !c.Settled() || !strings.Contains(c.Verdict(), "native 9.") || !strings.Contains(c.Verdict(), "the native engine is the bottleneck") {
		t.Errorf("native 9%% behind netperf: ok %v settled %v: %s", c.OK(), c.Settled(), c.Verdict())
	}
	if c := got[ip]; !c.OK() || c.By != "" {
		t.Errorf("native ahead of iperf3 is its own verdict: ok %v by %q", c.OK(), c.By)
	}

	got = stream(native, closeBy, closeBy, 99)
	if c := got[ip]; !c.OK() || !c.Within() || !c.Settled() || c.Verdict() != "agree (within 5%)" {
		t.Errorf("native 2%% behind: %s", c.Verdict())
	}
}

// TestUndecidedIsNotAFailure: a native engine behind by more than the
// threshold fails once its whole interval is beyond it; a ratio beyond
// it whose interval reaches back within is undecided, shown as such and
// not failed. Accuracy has no such middle: the counters are exact.
func TestUndecidedIsNotAFailure(t *testing.T) {
	stream := func(native, iperf3 []float64) Check {
		res := &model.RunResult{Cases: []model.CaseResult{
			caseWith("ovs", "tcp_stream", "native", model.ThroughputBPS, native...),
			caseWith("ovs", "tcp_stream", "iperf3", model.ThroughputBPS, iperf3...),
		}}
		return byWhat(Compare(res, DefaultThresholds))["throughput native/iperf3"]
	}
	iperf3 := []float64{10, 10, 10, 10, 10, 10, 10, 10}
	// 5.3% behind by the ratio, its turns spread by 4%: [0.914, 0.981].
	spread := stream([]float64{9.6, 9.0, 10.1, 9.2, 9.9, 9.1, 9.7, 9.2}, iperf3)
	if spread.Ratio > 0.95 || spread.Low > 0.95 || spread.High < 0.95 {
		t.Fatalf("the fixture is not across the threshold: %.3f [%.3f, %.3f]", spread.Ratio, spread.Low, spread.High)
	}
	if spread.Failed() || !spread.OK() || !spread.Undecided() || spread.Verdict() != "undecided: native 5.3% slower than iperf3, its 95% interval reaching within 5%" {
		t.Errorf("%.3f [%.3f, %.3f]: failed %v undecided %v: %q", spread.Ratio, spread.Low, spread.High, spread.Failed(), spread.Undecided(), spread.Verdict())
	}
	// 10% behind throughout.
	behind := stream([]float64{9.1, 8.8, 9.0, 9.2, 8.9, 9.0, 9.1, 8.9}, iperf3)
	if !behind.Failed() || behind.Undecided() || !strings.HasPrefix(behind.Verdict(), "FAIL comparability: native 10.0% slower than iperf3: the native engine is the bottleneck") {
		t.Errorf("%.3f [%.3f, %.3f]: failed %v undecided %v: %q", behind.Ratio, behind.Low, behind.High, behind.Failed(), behind.Undecided(), behind.Verdict())
	}
	// Within, but not settled: agrees, unsettled, as before.
	within := stream([]float64{10.5, 9.2, 10.1, 9.4, 10.3, 9.3, 9.9, 9.6}, iperf3)
	if within.Failed() || within.Undecided() || !strings.HasSuffix(within.Verdict(), ", unsettled") {
		t.Errorf("%.3f [%.3f, %.3f]: failed %v undecided %v: %q", within.Ratio, within.Low, within.High, within.Failed(), within.Undecided(), within.Verdict())
	}
	// One turn: no interval, so the ratio decides.
	if one := stream([]float64{9}, []float64{10}); !one.Failed() || one.Undecided() || one.High != 0 {
		t.Errorf("one turn 10%% behind: failed %v undecided %v, interval [%v, %v]", one.Failed(), one.Undecided(), one.Low, one.High)
	}
	acc := Check{Kind: Accuracy, Ratio: 0.97, Low: 0.90, High: 1.04, Limit: 0.02}
	if !acc.Failed() || acc.Undecided() {
		t.Errorf("an accuracy check 3%% off: failed %v undecided %v", acc.Failed(), acc.Undecided())
	}
}

// TestAccuracyHoldsEnginesToTheCounters fails a stream engine whose
// bytes are off the interface counters and a loss off the kernel's UDP
// counters, whatever the engines say of each other.
func TestAccuracyHoldsEnginesToTheCounters(t *testing.T) {
	stream := caseWith("veth", "tcp_stream", "native", model.ThroughputBPS, 64*24e9, 64*24e9)
	for _, s := range stream.Samples {
		s.Values[model.AppWireRatio] = 64
	}
	rr := func(loss, kernel float64) model.CaseResult {
		c := caseWith("veth", "udp_rr", "native", model.LatencyMeanUS, 20, 21, 19)
		for _, s := range c.Samples {
			s.Values[model.LossPct], s.Values[model.UDPKernelLossPct] = loss, kernel
		}
		return c
	}
	for _, tt := range []struct {
		name         string
		loss, kernel float64
		ok           bool
	}{
		{"no loss either way", 0, 0, true},
		{"the engine's loss is the kernel's", 5, 5.2, true},
		{"the engine sees none of the kernel's 5%", 0, 5, false},
		{"the engine's loss the kernel did not see", 10, 0, false},
	} {
		got := byWhat(Compare(&model.RunResult{Cases: []model.CaseResult{stream, rr(tt.loss, tt.kernel)}}, DefaultThresholds))
		w := got["received bytes/wire payload, native"]
		if w.Kind != Accuracy || w.OK() || w.Verdict() != "FAIL accuracy: off the kernel's counters by 64.0x (within 2%)" {
			t.Errorf("%s: 64 times the wire payload: ok %v: %s", tt.name, w.OK(), w.Verdict())
		}
		l := got["udp loss/kernel counters, native"]
		if l.Kind != Accuracy || l.Missing != "" || l.OK() != tt.ok || l.A != tt.loss || l.B != tt.kernel {
			t.Errorf("%s: loss %v%% against the kernel's %v%%: %+v, %s", tt.name, tt.loss, tt.kernel, l, l.Verdict())
		}
	}
}
