package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"cnbench/internal/model"
)

// seriesCase is a tcp_stream case whose samples hold one metric, taken in
// turns with the other modes when paired.
func seriesCase(index int, mode, metric string, xs []float64, paired bool) model.CaseResult {
	c := model.CaseResult{Case: model.Case{Index: index, Mode: mode, Topology: "chc", Workload: "tcp_stream",
		Engine: "native", Params: model.Params{Flows: 1}, Status: model.StatusOK, Outcome: model.Outcome{Paired: paired}}}
	for i, x := range xs {
		c.Samples = append(c.Samples, model.Sample{Index: i, Values: map[string]float64{metric: x}})
	}
	return c
}

// TestVsHostVerdicts checks the verdict on fixed samples: paired and
// unpaired, significant either way and not, for a metric where higher is
// better and one where lower is.
func TestVsHostVerdicts(t *testing.T) {
	// The machine slows down by 60% over the run; bridge stays 10% behind
	// host sample by sample.
	drift := []float64{10e9, 8e9, 6e9, 4e9}
	behind := []float64{9e9, 7.21e9, 5.4e9, 3.59e9}
	tests := []struct {
		name         string
		metric       string
		host, mode   []float64
		paired       bool
		want         Verdict
		ratio, slack float64
	}{
		{"paired, 10% slower", model.ThroughputBPS, drift, behind, true, Worse, 0.9, 0.002},
		{"the same samples unpaired", model.ThroughputBPS, drift, behind, false, NoSignificantDifference, 0.9, 0.01},
		{"unpaired, 10% faster", model.ThroughputBPS, []float64{10e9, 10.1e9, 9.9e9}, []float64{11e9, 11.1e9, 10.9e9}, false, Better, 1.1, 0.001},
		{"within the noise", model.ThroughputBPS, []float64{10e9, 11e9, 9e9}, []float64{10.5e9, 9.5e9, 10e9}, true, NoSignificantDifference, 1, 0.05},
		{"p99 25% higher", model.LatencyP99US, []float64{100, 102, 98}, []float64{125, 127, 123}, false, Worse, 1.25, 0.001},
		{"p99 20% lower", model.LatencyP99US, []float64{100, 102, 98}, []float64{80, 81.5, 78.5}, true, Better, 0.8, 0.001},
	}
	for _, tt := range tests {
		rep := Build(&model.RunResult{Cases: []model.CaseResult{
			seriesCase(0, "host", tt.metric, tt.host, tt.paired),
			seriesCase(1, "bridge", tt.metric, tt.mode, tt.paired),
		}})
		ch, ok := rep.Cases[1].VsHost[tt.metric]
		if !ok {
			t.Errorf("%s: no change against host", tt.name)
			continue
		}
		if ch.Verdict != tt.want || ch.Paired != tt.paired || ch.N != len(tt.host) || math.Abs(ch.Ratio.Ratio-tt.ratio) > tt.slack {
			t.Errorf("%s: %+v, want %s at %g (paired %v)", tt.name, ch, tt.want, tt.ratio, tt.paired)
		}
		if ch.CI95Low > ch.Ratio.Ratio || ch.CI95High < ch.Ratio.Ratio {
			t.Errorf("%s: ratio %g outside its interval [%g, %g]", tt.name, ch.Ratio.Ratio, ch.CI95Low, ch.CI95High)
		}
	}
}

// TestPairingNeedsBothSides compares sample by sample only when host and
// the mode both took turns.
func TestPairingNeedsBothSides(t *testing.T) {
	rep := Build(&model.RunResult{Cases: []model.CaseResult{
		seriesCase(0, "host", model.ThroughputBPS, []float64{10e9, 8e9, 6e9}, false),
		seriesCase(1, "bridge", model.ThroughputBPS, []float64{9e9, 7.2e9, 5.4e9}, true),
	}})
	if ch := rep.Cases[1].VsHost[model.ThroughputBPS]; ch.Paired || ch.N != 3 {
		t.Errorf("a paired case against an unpaired host case: %+v", ch)
	}
}

// TestChangePercentages turns a ratio of 0.9 with interval [0.85, 0.95]
// into percentages: a change of -10% [-15, -5], and for throughput an
// overhead of +10% [+5, +15]; for a latency the overhead is the change.
func TestChangePercentages(t *testing.T) {
	var ch Change
	ch.Ratio.Ratio, ch.CI95Low, ch.CI95High, ch.N = 0.9, 0.85, 0.95, 4
	near := func(got, want [3]float64) bool {
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-9 {
				return false
			}
		}
		return true
	}
	if p, l, h := ch.Pct(); !near([3]float64{p, l, h}, [3]float64{-10, -15, -5}) {
		t.Errorf("change %g [%g, %g], want -10 [-15, -5]", p, l, h)
	}
	if p, l, h := ch.OverheadPct(true); !near([3]float64{p, l, h}, [3]float64{10, 5, 15}) {
		t.Errorf("throughput overhead %g [%g, %g], want 10 [5, 15]", p, l, h)
	}
	if p, l, h := ch.OverheadPct(false); !near([3]float64{p, l, h}, [3]float64{-10, -15, -5}) {
		t.Errorf("latency overhead %g [%g, %g], want -10 [-15, -5]", p, l, h)
	}
	if got := formatChange(ch, "throughput"); got != "-10.0% [-15.0, -5.0] throughput" {
		t.Errorf("formatted %q", got)
	}
	ch.N = 1
	if got := formatChange(ch, "throughput"); got != "-10.0% throughput" {
		t.Errorf("one ratio formatted %q, want no interval", got)
	}
}

// TestTableShowsVerdict: the table's row of a paired mode names the
// change, its interval, the verdict and that the samples were paired.
func TestTableShowsVerdict(t *testing.T) {
	rep := Build(&model.RunResult{Cases: []model.CaseResult{
		seriesCase(0, "host", model.ThroughputBPS, []float64{10e9, 8e9, 6e9, 4e9}, true),
		seriesCase(1, "bridge", model.ThroughputBPS, []float64{9e9, 7.21e9, 5.4e9, 3.59e9}, true),
	}})
	var b bytes.Buffer
	if err := Write(&b, rep, "table"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 5 || !strings.Contains(lines[4], "-10.0% [-10.") || !strings.HasSuffix(lines[4], "throughput  worse, paired") {
		t.Errorf("bridge row does not show the paired verdict:\n%s", b.String())
	}
}

// TestOverheadChartInterval: the overhead chart plots the cost from the
// ratio with its interval as the error bar, not cut at zero where the
// interval holds it.
func TestOverheadChartInterval(t *testing.T) {
	rep := Build(&model.RunResult{Cases: []model.CaseResult{
		seriesCase(0, "host", model.ThroughputBPS, []float64{10e9, 11e9, 9e9}, true),
		seriesCase(1, "bridge", model.ThroughputBPS, []float64{9.5e9, 10.5e9, 8.9e9}, true),
	}})
	charts, err := Charts(rep, "overhead")
	if err != nil || len(charts) != 1 || len(charts[0].Values) != 1 {
		t.Fatalf("overhead charts %+v, %v", charts, err)
	}
	v := charts[0].Values[0]
	o, low, high := rep.Cases[1].VsHost[model.ThroughputBPS].OverheadPct(true)
	if v.Y != o || v.Low != low || v.High != high || low >= 0 || high <= 0 {
		t.Errorf("plotted %+v, want %g [%g, %g] around zero", v, o, low, high)
	}
}
