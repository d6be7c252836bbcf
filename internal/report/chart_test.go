package report

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"cnbench/internal/model"
)

// modeCost is how much of the native rate each mode keeps in the
// synthetic runs below, and how much latency it adds.
var modeCost = map[string]struct{ rate, latency float64 }{
	"host": {1, 1}, "veth": {0.93, 1.08}, "bridge": {0.85, 1.15}, "macvlan": {0.97, 1.05}, "nat": {0.7, 1.3},
}

var chartModes = []string{"host", "veth", "bridge", "macvlan", "nat"}

// richRun is a run with every axis the charts draw: several flow counts
// and message sizes, two topologies, a request/response workload with
// histograms, and a skipped and a failed case.
func richRun(t *testing.T) *model.RunResult {
	t.Helper()
	res := &model.RunResult{Run: model.Run{
		ID: 12, Scenario: "charts", ScenarioDoc: "name: charts\n", Started: at(0, 0), Finished: at(20, 0), Status: "done",
		Env: model.Environment{Hostname: "bench-2", Kernel: "6.12.0", CPUModel: "Intel Xeon Gold 6338", Cores: 64,
			NUMANodes: 2, MemoryMB: 256000, Version: "0.2.0", GoVersion: "go1.26.8"},
	}}
	add := func(mode, topo, workload string, p model.Params, samples []model.Sample) {
		i := len(res.Cases)
		key := strings.Join([]string{mode, topo, workload, compactParams(p)}, "/")
		res.Cases = append(res.Cases, model.CaseResult{
			Case:    model.Case{Index: i, Key: key, Mode: mode, Topology: topo, Workload: workload, Engine: "native", Params: p, Status: model.StatusOK},
			Samples: samples,
		})
	}
	stream := func(gbps float64) []model.Sample {
		var out []model.Sample
		for i, k := range []float64{0.98, 1.0, 1.02} {
			bps := gbps * k * 1e9
			out = append(out, model.Sample{Index: i, Started: at(1, 10*i), Duration: time.Second, Values: map[string]float64{
				model.ThroughputBPS: bps, model.CPUSenderPct: 40 + gbps, model.CPUReceiverPct: 50 + gbps,
				model.CPUSPerGB: (90 + 2*gbps) / 100 / (bps / 8 / 1e9),
			}})
		}
		return out
	}
	for _, topo := range []string{"chc", "chhc"} {
		base := map[string]float64{"chc": 40, "chhc": 9.4}[topo]
		for _, m := range chartModes {
			for _, flows := range []int{1, 2, 4, 8} {
				samples := stream(base * modeCost[m].rate * math.Min(1, 0.4+0.2*float64(flows)))
				if flows > 1 {
					spreadOverFlows(samples, flows)
				}
				add(m, topo, "tcp_stream", model.Params{Flows: flows, MsgSize: 128 << 10}, samples)
			}
		}
	}
	for _, m := range chartModes {
		for _, size := range []int{1 << 10, 16 << 10, 64 << 10} {
			add(m, "chc", "tcp_stream", model.Params{Flows: 1, MsgSize: size}, stream(40*modeCost[m].rate*math.Min(1, float64(size)/(64<<10)+0.2)))
		}
	}
	for _, topo := range []string{"chc", "chhc"} {
		for _, m := range chartModes {
			base := map[string]float64{"chc": 22, "chhc": 35}[topo] * modeCost[m].latency
			samples := rrSamples(t, []float64{1e6 / base, 1e6 / base * 0.99, 1e6 / base * 1.01}, base, 30)
			for i := range samples {
				samples[i].Values[model.CPUUSPerTx] = 9 * modeCost[m].latency
			}
			add(m, topo, "tcp_rr", model.Params{Flows: 1, RequestSize: 64, ResponseSize: 64}, samples)
		}
	}
	res.Cases = append(res.Cases,
		model.CaseResult{Case: model.Case{Index: len(res.Cases), Key: "ipvlan/chc/tcp_stream", Mode: "ipvlan", Topology: "chc",
			Workload: "tcp_stream", Engine: "native", Status: model.StatusSkipped, Reason: "ipvlan: kernel module not available"}},
		model.CaseResult{Case: model.Case{Index: len(res.Cases) + 1, Key: "nat/chhc/tcp_rr/flows=16", Mode: "nat", Topology: "chhc",
			Workload: "tcp_rr", Engine: "native", Params: model.Params{Flows: 16}, Status: model.StatusFailed, Reason: "sample 1: connection reset by peer"}},
	)
	return res
}

// spreadOverFlows gives stream samples the figures of flows that shared
// the throughput unevenly: the slowest flow got half a fair share, the
// 10th percentile three quarters, the 90th five quarters and the fastest
// one and a half.
func spreadOverFlows(samples []model.Sample, flows int) {
	for _, s := range samples {
		fair := s.Values[model.ThroughputBPS] / float64(flows)
		s.Values[model.FlowThroughputMinBPS] = fair / 2
		s.Values[model.FlowThroughputP10BPS] = fair * 3 / 4
		s.Values[model.FlowThroughputMedianBPS] = fair
		s.Values[model.FlowThroughputP90BPS] = fair * 5 / 4
		s.Values[model.FlowThroughputMaxBPS] = fair * 3 / 2
		s.Values[model.FlowFairnessJain] = 0.9
	}
}

// TestFlowSpreadChartPlotsTheFlowFigures reads back what the flowspread
// chart plots: each mode's slowest, 10th percentile, median, 90th
// percentile and fastest flow, the means of the samples' figures in
// Gbit/s.
func TestFlowSpreadChartPlotsTheFlowFigures(t *testing.T) {
	rep := Build(richRun(t))
	charts, err := Charts(rep, "flowspread")
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 6 {
		t.Fatalf("%d flowspread charts, want 6 (flows 2, 4 and 8 on two topologies)", len(charts))
	}
	for _, ch := range charts {
		if ch.YLabel != "throughput of one flow (Gbit/s)" {
			t.Errorf("%s: value axis %q", ch.ID, ch.YLabel)
		}
		if len(ch.Values) != 5*len(chartModes) {
			t.Errorf("%s: %d values, want %d", ch.ID, len(ch.Values), 5*len(chartModes))
		}
		for _, v := range ch.Values {
			i := slices.IndexFunc(rep.Cases, func(c CaseReport) bool {
				return c.Mode == v.Series && strings.Contains(ch.Title, c.Topology+" · "+compactParams(c.Params))
			})
			if i < 0 {
				t.Fatalf("%s: no case of %s for %q", ch.ID, v.Series, ch.Title)
			}
			metric := flowSpreadMetrics[slices.Index([]string{"slowest", "p10", "median", "p90", "fastest"}, v.Group)]
			if want := rep.Cases[i].Metrics[metric].Mean / 1e9; math.Abs(v.Y-want) > 1e-9*want {
				t.Errorf("%s: %s %s plotted %.6g, the case's %s is %.6g Gbit/s", ch.ID, v.Series, v.Group, v.Y, metric, want)
			}
		}
	}
}

func TestChartsOfEveryKind(t *testing.T) {
	charts, err := Charts(Build(richRun(t)), "")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	ids := map[string]bool{}
	for _, ch := range charts {
		count[ch.Kind]++
		if ids[ch.ID] {
			t.Errorf("chart id %q used twice", ch.ID)
		}
		ids[ch.ID] = true
	}
	want := map[string]int{
		"bars": 2, "cpu": 2, "overhead": 2,
		"flows":   2, // one per topology
		"msgsize": 1, // chc with one flow only
		"latency": 2, "cdf": 2,
		"flowspread": 6, // flows 2, 4 and 8 on each topology
	}
	for kind, n := range want {
		if count[kind] != n {
			t.Errorf("%d %s charts, want %d (all: %v)", count[kind], kind, n, count)
		}
	}
}

func TestChartsOfOneCaseHaveNoLines(t *testing.T) {
	// The golden fixture has one flow count and one message size: there
	// is nothing to draw against them.
	for _, kind := range []string{"flows", "msgsize"} {
		charts, err := Charts(Build(fixture(t)), kind)
		if err != nil {
			t.Fatal(err)
		}
		if len(charts) != 0 {
			t.Errorf("%d %s charts for a run with one value on the axis", len(charts), kind)
		}
	}
}

func TestUnknownChartKind(t *testing.T) {
	_, err := Charts(Build(fixture(t)), "pie")
	if err == nil || !strings.Contains(err.Error(), "cdf") {
		t.Fatalf("Charts(pie) = %v, want an error listing the kinds", err)
	}
}

func TestPaletteIsStableAcrossRuns(t *testing.T) {
	a := newPalette(Build(fixture(t)))
	b := newPalette(Build(richRun(t)))
	if a.modes[0] != "host" || b.modes[0] != "host" {
		t.Errorf("host is not first: %v, %v", a.modes, b.modes)
	}
	for _, m := range []string{"host", "bridge"} {
		if a.colors[m] != b.colors[m] {
			t.Errorf("%s is %v in one run and %v in another", m, a.colors[m], b.colors[m])
		}
	}
	rep := &Report{Cases: []CaseReport{{Case: model.Case{Mode: "cni:flannel"}}, {Case: model.Case{Mode: "docker:bridge"}}}}
	p := newPalette(rep)
	if p.colors["cni:flannel"] == p.colors["docker:bridge"] {
		t.Error("two modes without a colour of their own share one")
	}
}

func TestWriteChartsFormats(t *testing.T) {
	charts, err := Charts(Build(richRun(t)), "bars")
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range ChartFormats {
		var b bytes.Buffer
		if err := WriteCharts(&b, charts, format); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		switch format {
		case "svg":
			s := b.String()
			if !strings.Contains(s, "<svg") || !strings.Contains(s, "@font-face") || !strings.Contains(s, "tcp_rr: transaction rate") {
				t.Errorf("svg lacks the element, the embedded font or a title: %.300s", s)
			}
		case "png":
			img, err := png.Decode(&b)
			if err != nil {
				t.Fatal(err)
			}
			if img.Bounds().Dx() < 1000 {
				t.Errorf("png is %d pixels wide, want print resolution", img.Bounds().Dx())
			}
			if blank(img) {
				t.Error("png is blank")
			}
		case "pdf":
			if !bytes.HasPrefix(b.Bytes(), []byte("%PDF")) {
				t.Errorf("pdf starts with %q", b.Bytes()[:8])
			}
		}
	}
}

func TestChartFormat(t *testing.T) {
	for path, want := range map[string]string{"a.svg": "svg", "x/B.PNG": "png", "c.pdf": "pdf"} {
		if got, err := ChartFormat(path); got != want || err != nil {
			t.Errorf("ChartFormat(%q) = %q, %v, want %q", path, got, err, want)
		}
	}
	if _, err := ChartFormat("chart.jpg"); err == nil || !strings.Contains(err.Error(), ".svg") {
		t.Errorf("ChartFormat(chart.jpg) = %v, want an error naming the formats", err)
	}
}

func TestLogTicks(t *testing.T) {
	var got []string
	for _, tk := range (logTicks{format: formatPlain}).Ticks(15, 700) {
		got = append(got, tk.Label)
	}
	if want := []string{"20", "50", "100", "200", "500"}; !slices.Equal(got, want) {
		t.Errorf("ticks = %v, want %v", got, want)
	}
}

// blank reports whether an image is one colour throughout.
func blank(img interface {
	Bounds() image.Rectangle
	At(x, y int) color.Color
}) bool {
	b := img.Bounds()
	first := img.At(b.Min.X, b.Min.Y)
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			if img.At(x, y) != first {
				return false
			}
		}
	}
	return true
}

// TestChartUnitsFollowTheMetric draws the charts of a run with a stream,
// a ping and a rate search, and requires each value axis to name its
// metric's quantity and unit, and each value in that unit: a stream that
// costs 1.2 CPU seconds per GB costs 0.15 cores per Gbit/s.
func TestChartUnitsFollowTheMetric(t *testing.T) {
	sample := func(values map[string]float64) []model.Sample {
		return []model.Sample{{Started: at(1, 0), Duration: time.Second, Values: values}}
	}
	res := &model.RunResult{Run: model.Run{ID: 1, Scenario: "units", Started: at(0, 0), Status: "done"}}
	for i, c := range []struct {
		workload string
		values   map[string]float64
	}{
		{"tcp_stream", map[string]float64{model.ThroughputBPS: 10e9, model.CPUSPerGB: 1.2}},
		{"ping", map[string]float64{model.RTTAvgUS: 42}},
		{"udp_max_rate", map[string]float64{model.MaxRateBPS: 2.5e9}},
		{"tcp_crr", map[string]float64{model.ConnectionsPerS: 9000, model.CPUUSPerTx: 30}},
	} {
		res.Cases = append(res.Cases, model.CaseResult{Case: model.Case{Index: i, Key: c.workload, Mode: "host", Topology: "chc",
			Workload: c.workload, Engine: "native", Status: model.StatusOK}, Samples: sample(c.values)})
	}
	charts, err := Charts(Build(res), "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		label string
		value float64
	}{
		"bars-tcp_stream":   {"throughput (Gbit/s)", 10},
		"cpu-tcp_stream":    {"stream CPU cost (cores per Gbit/s)", 0.15},
		"bars-ping":         {"mean round trip (µs)", 42},
		"bars-udp_max_rate": {"max rate (Gbit/s)", 2.5},
		"bars-tcp_crr":      {"connection rate (per second)", 9000},
		"cpu-tcp_crr":       {"CPU time per transaction (µs)", 30},
	}
	for _, ch := range charts {
		w, ok := want[ch.ID]
		if !ok {
			continue
		}
		delete(want, ch.ID)
		if ch.YLabel != w.label {
			t.Errorf("%s: axis %q, want %q", ch.ID, ch.YLabel, w.label)
		}
		if len(ch.Values) != 1 || math.Abs(ch.Values[0].Y-w.value) > 1e-9*w.value {
			t.Errorf("%s: plots %+v, want %v", ch.ID, ch.Values, w.value)
		}
	}
	for id := range want {
		t.Errorf("no chart %s", id)
	}
}
