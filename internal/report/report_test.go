package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/model"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Histograms track one nanosecond to a minute at three significant digits,
// the settings a latency recorder would use.
func newHistogram(t *testing.T) *hdrhistogram.Histogram {
	t.Helper()
	return hdrhistogram.New(1, int64(time.Minute), 3)
}

func encode(t *testing.T, h *hdrhistogram.Histogram) []byte {
	t.Helper()
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// latencySample records count transactions whose latency rises linearly
// from lowUS to highUS, then a tail of tailCount at tailUS.
func latencyHistogram(t *testing.T, count int, lowUS, highUS float64, tailCount int, tailUS float64) *hdrhistogram.Histogram {
	t.Helper()
	h := newHistogram(t)
	for i := range count {
		us := lowUS + (highUS-lowUS)*float64(i)/float64(count-1)
		if err := h.RecordValue(int64(us * 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if tailCount > 0 {
		if err := h.RecordValues(int64(tailUS*1000), int64(tailCount)); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func at(minute, second int) time.Time {
	return time.Date(2025, 3, 14, 9, minute, second, 0, time.UTC)
}

func streamSamples(gbps []float64, cpuSnd, cpuRcv []float64) []model.Sample {
	var out []model.Sample
	for i, g := range gbps {
		out = append(out, model.Sample{
			Index: i, Started: at(1, 10*i), Duration: 10 * time.Second,
			Values: map[string]float64{
				model.ThroughputBPS:  g * 1e9,
				model.CPUSenderPct:   cpuSnd[i],
				model.CPUReceiverPct: cpuRcv[i],
			},
		})
	}
	return out
}

func rrSamples(t *testing.T, tps []float64, baseUS, cpuPct float64) []model.Sample {
	var out []model.Sample
	for i, rate := range tps {
		h := latencyHistogram(t, 2000, baseUS, baseUS*1.5+float64(i), 20+10*i, baseUS*4)
		out = append(out, model.Sample{
			Index: i, Started: at(2, 10*i), Duration: 10 * time.Second,
			Values: map[string]float64{
				model.TransactionsPerS: rate,
				model.CPUSenderPct:     cpuPct + float64(i),
				model.CPUReceiverPct:   cpuPct + 2 + float64(i),
				// What a tool might report on its own; the histograms
				// must take precedence.
				model.LatencyP99US: 1,
			},
			Latency: encode(t, h),
		})
	}
	return out
}

func fixture(t *testing.T) *model.RunResult {
	t.Helper()
	stream := model.Params{Flows: 4, MsgSize: 128 << 10, DurationMS: 10000, Samples: 3}
	rr := model.Params{RequestSize: 64, ResponseSize: 64, DurationMS: 10000, Samples: 3}
	return &model.RunResult{
		Run: model.Run{
			ID: 7, Scenario: "bridge-vs-host", ScenarioDoc: "name: bridge-vs-host\n",
			Started: at(0, 0), Finished: at(9, 30), Status: "done", Seed: 1234,
			Env: model.Environment{
				Hostname: "bench-1", Kernel: "6.8.0-45-generic", CPUModel: "AMD EPYC 7543", Cores: 32,
				NUMANodes: 2, MemoryMB: 128000, Version: "0.1.0", GoVersion: "go1.26.8",
				Tools: map[string]string{"iperf3": "iperf 3.16", "netperf": "2.7.0"},
			},
		},
		Cases: []model.CaseResult{
			{Case: model.Case{Index: 0, Key: "host/direct/tcp_stream/flows=4,msg=131072", Mode: "host", Topology: "direct",
				Workload: "tcp_stream", Engine: "iperf3", Params: stream, Status: model.StatusOK},
				Samples: streamSamples([]float64{9.40, 9.42, 9.41}, []float64{61, 62, 60}, []float64{70, 71, 72})},
			{Case: model.Case{Index: 1, Key: "bridge/direct/tcp_stream/flows=4,msg=131072", Mode: "bridge", Topology: "direct",
				Workload: "tcp_stream", Engine: "iperf3", Params: stream, Status: model.StatusOK},
				Samples: streamSamples([]float64{8.10, 8.31, 8.25}, []float64{75, 77, 74}, []float64{88, 90, 89})},
			{Case: model.Case{Index: 2, Key: "host/direct/tcp_rr/req=64,resp=64", Mode: "host", Topology: "direct",
				Workload: "tcp_rr", Engine: "netperf", Params: rr, Status: model.StatusOK, Outcome: model.Outcome{Paired: true}},
				Samples: rrSamples(t, []float64{31000, 30800, 31150}, 30, 40)},
			{Case: model.Case{Index: 3, Key: "bridge/direct/tcp_rr/req=64,resp=64", Mode: "bridge", Topology: "direct",
				Workload: "tcp_rr", Engine: "netperf", Params: rr, Status: model.StatusOK, Outcome: model.Outcome{Paired: true}},
				Samples: rrSamples(t, []float64{25500, 25900, 25300}, 37, 47)},
			{Case: model.Case{Index: 4, Key: "macvlan/direct/tcp_stream/flows=4,msg=131072", Mode: "macvlan", Topology: "direct",
				Workload: "tcp_stream", Engine: "iperf3", Params: stream, Status: model.StatusSkipped,
				Reason: "macvlan needs a physical parent interface"}},
			{Case: model.Case{Index: 5, Key: "ipvlan/direct/tcp_rr/req=64,resp=64", Mode: "ipvlan", Topology: "direct",
				Workload: "tcp_rr", Engine: "netperf", Params: rr, Status: model.StatusFailed,
				Reason: "netperf: connection refused"},
				// Samples of a failed case are stored but not reported.
				Samples: rrSamples(t, []float64{1}, 10, 5)},
		},
	}
}

func TestGoldenFiles(t *testing.T) {
	rep := Build(fixture(t))
	// HTML is checked in a browser instead (html_test.go): its inline
	// charts and font would make a golden file of half a megabyte.
	extensions := map[string]string{"table": "txt", "json": "json", "csv": "csv", "markdown": "md"}
	for _, format := range slices.DeleteFunc(slices.Clone(Formats), func(f string) bool { return f == "html" }) {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, rep, format); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "report."+extensions[format])
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/report -update to create it)", err)
			}
			if !sameUpToRounding(buf.String(), string(want)) {
				t.Errorf("%s output differs from %s (run with -update if the change is intended)\n got:\n%s\nwant:\n%s",
					format, path, buf.Bytes(), want)
			}
		})
	}
}

var number = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?`)

// sameUpToRounding compares outputs allowing numbers to differ in their
// last digits: some architectures fuse multiply-adds, which moves the last
// bit of a float64 without making the result any less right.
func sameUpToRounding(got, want string) bool {
	if number.ReplaceAllString(got, "#") != number.ReplaceAllString(want, "#") {
		return false
	}
	gotNumbers, wantNumbers := number.FindAllString(got, -1), number.FindAllString(want, -1)
	for i := range gotNumbers {
		if gotNumbers[i] == wantNumbers[i] {
			continue
		}
		g, errG := strconv.ParseFloat(gotNumbers[i], 64)
		w, errW := strconv.ParseFloat(wantNumbers[i], 64)
		if errG != nil || errW != nil || math.Abs(g-w) > 1e-9*math.Max(math.Abs(g), math.Abs(w)) {
			return false
		}
	}
	return true
}

func TestSameUpToRounding(t *testing.T) {
	if !sameUpToRounding("x 58.51586228824967 y", "x 58.515862288249664 y") {
		t.Error("last-digit difference rejected")
	}
	for _, other := range []string{"x 58.6 y", "x 58.51586228824967 z", "x 58.51586228824967"} {
		if sameUpToRounding("x 58.51586228824967 y", other) {
			t.Errorf("accepted %q", other)
		}
	}
}

func TestUnknownFormatListsValidOnes(t *testing.T) {
	err := Write(&bytes.Buffer{}, Build(fixture(t)), "xml")
	if err == nil {
		t.Fatal("Write accepted format xml")
	}
	for _, f := range Formats {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %s", err, f)
		}
	}
}

// TestJSONLayout pins the key sets of the machine interface independently
// of the golden file, so a careless -update cannot change them.
func TestJSONLayout(t *testing.T) {
	raw, err := json.Marshal(Build(fixture(t)))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Run   map[string]json.RawMessage
		Cases []map[string]json.RawMessage
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	checkKeys(t, "run", doc.Run, "id", "scenario", "started", "finished", "status", "seed", "environment")
	caseKeys := []string{"index", "key", "mode", "topology", "workload", "params", "engine", "status", "metrics"}
	checkKeys(t, "host case", doc.Cases[0], caseKeys...)
	checkKeys(t, "bridge case", doc.Cases[1], append(caseKeys, "overhead_pct", "vs_host_pct", "vs_host_ratio")...)
	var changes map[string]map[string]json.RawMessage
	if err := json.Unmarshal(doc.Cases[1]["vs_host_ratio"], &changes); err != nil {
		t.Fatal(err)
	}
	if len(changes) == 0 {
		t.Error("bridge case has no vs_host_ratio")
	}
	for name, ch := range changes {
		checkKeys(t, "vs_host_ratio "+name, ch, "ratio", "ci95_low", "ci95_high", "change_pct", "change_ci95_low", "change_ci95_high",
			"n", "paired", "verdict")
	}
	checkKeys(t, "skipped case", doc.Cases[4], append(caseKeys, "reason")...)
	if string(doc.Cases[4]["metrics"]) != "{}" {
		t.Errorf("skipped case metrics = %s, want {}", doc.Cases[4]["metrics"])
	}

	var metrics map[string]map[string]json.RawMessage
	if err := json.Unmarshal(doc.Cases[3]["metrics"], &metrics); err != nil {
		t.Fatal(err)
	}
	for name, m := range metrics {
		if _, known := model.Metrics[name]; !known {
			t.Errorf("unknown metric name %q", name)
		}
		checkKeys(t, name, m, "mean", "stddev", "min", "max", "ci95_low", "ci95_high", "n", "unit")
	}
	if got := string(metrics[model.LatencyP99US]["unit"]); got != `"us"` {
		t.Errorf("latency unit = %s, want \"us\"", got)
	}
}

func checkKeys(t *testing.T, what string, obj map[string]json.RawMessage, want ...string) {
	t.Helper()
	var got []string
	for k := range obj {
		got = append(got, k)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s keys = %v, want %v", what, got, want)
	}
}

func TestUnfinishedRunHasNullFinish(t *testing.T) {
	res := fixture(t)
	res.Run.Finished = time.Time{}
	raw, err := json.Marshal(Build(res))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"finished":null`)) {
		t.Fatalf("unfinished run encoded as %s", raw)
	}
}

// A fast sample with many transactions and a slow one with few: the
// merged tail is dominated by the fast sample, while averaging the two
// per-sample percentiles would land halfway to the slow one.
func TestPercentilesComeFromMergedHistograms(t *testing.T) {
	fast := latencyHistogram(t, 10000, 90, 110, 0, 0)
	slow := latencyHistogram(t, 100, 5000, 20000, 0, 0)
	res := &model.RunResult{Cases: []model.CaseResult{{
		Case: model.Case{Mode: "host", Workload: "tcp_rr", Status: model.StatusOK},
		Samples: []model.Sample{
			{Index: 0, Latency: encode(t, fast)},
			{Index: 1, Latency: encode(t, slow)},
		},
	}}}
	metrics := Build(res).Cases[0].Metrics

	merged := newHistogram(t)
	merged.Merge(fast)
	merged.Merge(slow)
	for _, p := range model.LatencyPercentiles {
		s := metrics[p.Name]
		wantMerged := float64(merged.ValueAtQuantile(p.Quantile)) / 1000
		fastP, slowP := float64(fast.ValueAtQuantile(p.Quantile))/1000, float64(slow.ValueAtQuantile(p.Quantile))/1000
		averaged := (fastP + slowP) / 2
		if s.Mean != wantMerged {
			t.Errorf("%s mean = %v, want merged value %v", p.Name, s.Mean, wantMerged)
		}
		if math.Abs(s.Mean-averaged) < 1 {
			t.Errorf("%s mean %v is the average of per-sample values %v", p.Name, s.Mean, averaged)
		}
		if s.N != 2 || s.Min != min(fastP, slowP) || s.Max != max(fastP, slowP) {
			t.Errorf("%s spread = n %d, [%v, %v], want n 2, [%v, %v]", p.Name, s.N, s.Min, s.Max, min(fastP, slowP), max(fastP, slowP))
		}
	}
	if got, want := metrics[model.LatencyMeanUS].Mean, merged.Mean()/1000; got != want {
		t.Errorf("latency mean = %v, want merged mean %v", got, want)
	}
}

func TestLatencyValuesUsedWithoutHistograms(t *testing.T) {
	res := &model.RunResult{Cases: []model.CaseResult{{
		Case: model.Case{Workload: "tcp_rr", Status: model.StatusOK},
		Samples: []model.Sample{
			{Index: 0, Values: map[string]float64{model.LatencyP99US: 100}},
			{Index: 1, Values: map[string]float64{model.LatencyP99US: 200}},
		},
	}}}
	if got := Build(res).Cases[0].Metrics[model.LatencyP99US]; got.Mean != 150 || got.N != 2 {
		t.Fatalf("p99 without histograms = %+v, want the mean of the values", got)
	}
}

func TestUndecodableHistogramIsReported(t *testing.T) {
	good := latencyHistogram(t, 100, 10, 20, 0, 0)
	res := &model.RunResult{Cases: []model.CaseResult{{
		Case: model.Case{Index: 3, Workload: "tcp_rr", Status: model.StatusOK},
		Samples: []model.Sample{
			{Index: 0, Latency: encode(t, good)},
			{Index: 1, Latency: []byte("not a histogram")},
		},
	}}}
	rep := Build(res)
	if got := rep.Cases[0].Metrics[model.LatencyP50US].N; got != 1 {
		t.Errorf("p50 over %d samples, want 1", got)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "case 3 sample 1") {
		t.Errorf("warnings = %q, want one naming case 3 sample 1", rep.Warnings)
	}
	var table bytes.Buffer
	if err := Write(&table, rep, "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "note: "+rep.Warnings[0]) {
		t.Errorf("table does not show the warning:\n%s", table.String())
	}
}

func okCase(index int, mode string, params model.Params, values map[string]float64) model.CaseResult {
	return model.CaseResult{
		Case:    model.Case{Index: index, Mode: mode, Topology: "direct", Workload: "tcp_stream", Engine: "iperf3", Params: params, Status: model.StatusOK},
		Samples: []model.Sample{{Values: values}},
	}
}

func TestOverheadSign(t *testing.T) {
	params := model.Params{Flows: 1}
	res := &model.RunResult{Cases: []model.CaseResult{
		okCase(0, "host", params, map[string]float64{model.ThroughputBPS: 10e9, model.CPUSenderPct: 50, model.Retransmits: 0}),
		okCase(1, "bridge", params, map[string]float64{model.ThroughputBPS: 8e9, model.CPUSenderPct: 75, model.Retransmits: 3}),
		okCase(2, "veth", params, map[string]float64{model.ThroughputBPS: 11e9, model.CPUSenderPct: 40}),
	}}
	rep := Build(res)
	if rep.Cases[0].OverheadPct != nil {
		t.Errorf("host case has overheads %v", rep.Cases[0].OverheadPct)
	}
	tests := []struct {
		caseIndex int
		metric    string
		want      float64
	}{
		{1, model.ThroughputBPS, 20},  // less throughput costs
		{1, model.CPUSenderPct, 50},   // more CPU costs
		{2, model.ThroughputBPS, -10}, // faster than native is negative
		{2, model.CPUSenderPct, -20},
	}
	for _, tt := range tests {
		got, ok := rep.Cases[tt.caseIndex].OverheadPct[tt.metric]
		if !ok || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("case %d %s overhead = %v (present %v), want %v", tt.caseIndex, tt.metric, got, ok, tt.want)
		}
	}
	if _, ok := rep.Cases[1].OverheadPct[model.Retransmits]; ok {
		t.Error("overhead computed against a zero host mean")
	}
}

func TestOverheadNeedsMatchingBaseline(t *testing.T) {
	res := &model.RunResult{Cases: []model.CaseResult{
		okCase(0, "host", model.Params{Flows: 1}, map[string]float64{model.ThroughputBPS: 10e9}),
		okCase(1, "bridge", model.Params{Flows: 4}, map[string]float64{model.ThroughputBPS: 8e9}),
		okCase(2, "host", model.Params{Flows: 8}, nil),
		okCase(3, "bridge", model.Params{Flows: 8}, map[string]float64{model.ThroughputBPS: 8e9}),
	}}
	res.Cases[2].Status, res.Cases[2].Samples = model.StatusSkipped, nil
	rep := Build(res)
	if rep.Cases[1].OverheadPct != nil {
		t.Errorf("overhead against a host case with other params: %v", rep.Cases[1].OverheadPct)
	}
	if rep.Cases[3].OverheadPct != nil {
		t.Errorf("overhead against a skipped host case: %v", rep.Cases[3].OverheadPct)
	}
}

// TestOutcomeIsNotAParameter: a host case that sampled longer or retook
// samples is still the baseline of the same case in another mode, and
// the JSON layout shows its outcome apart from its params.
func TestOutcomeIsNotAParameter(t *testing.T) {
	res := fixture(t)
	res.Cases[0].Outcome = model.Outcome{StoppedBy: "max_samples", Retaken: 2}
	rep := Build(res)
	if rep.Cases[1].OverheadPct == nil {
		t.Error("no overhead against a host case that retook samples")
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Params  map[string]any `json:"params"`
			Outcome map[string]any `json:"outcome"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Cases[0].Outcome; got["stopped_by"] != "max_samples" || got["retaken"] != float64(2) {
		t.Errorf("host case outcome = %v", got)
	}
	if _, ok := doc.Cases[0].Params["stopped_by"]; ok {
		t.Errorf("host case params hold its outcome: %v", doc.Cases[0].Params)
	}
	if doc.Cases[1].Outcome != nil {
		t.Errorf("bridge case outcome = %v, want none", doc.Cases[1].Outcome)
	}
}

func TestSkippedCaseHasNoMetrics(t *testing.T) {
	rep := Build(fixture(t))
	for _, i := range []int{4, 5} {
		c := rep.Cases[i]
		if c.Metrics != nil || c.OverheadPct != nil || c.Reason == "" {
			t.Errorf("case %d (%s) = metrics %v, overheads %v, reason %q", i, c.Status, c.Metrics, c.OverheadPct, c.Reason)
		}
	}
}

func TestCompactParams(t *testing.T) {
	tests := []struct {
		params model.Params
		want   string
	}{
		{model.Params{Flows: 4, MsgSize: 128 << 10, DurationMS: 10000}, "flows=4 msg=128K"},
		{model.Params{RequestSize: 64, ResponseSize: 64}, "req=64 resp=64"},
		{model.Params{Flows: 1, MsgSize: 1 << 20, NICRate: "1gbit", MTU: 9000}, "flows=1 msg=1M rate=1gbit mtu=9000"},
		{model.Params{RequestSize: 1500, ResponseSize: 2048}, "req=1500 resp=2K"},
		{model.Params{}, "-"},
		// Cases that differ only in pinning, offloads or socket knobs
		// are told apart.
		{model.Params{Flows: 4, MsgSize: 128 << 10, Placement: "different_cores"}, "flows=4 msg=128K pin=different_cores"},
		{model.Params{Flows: 1, GRO: "off", TSO: "on", CC: "bbr", SendBuffer: 256 << 10, MSS: 1400},
			"flows=1 gro=off tso=on cc=bbr mss=1400 sndbuf=256K"},
	}
	for _, tt := range tests {
		if got := compactParams(tt.params); got != tt.want {
			t.Errorf("compactParams(%+v) = %q, want %q", tt.params, got, tt.want)
		}
	}
}
