package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
	_ "modernc.org/sqlite"

	"cnbench/internal/model"
	"cnbench/internal/report"
	"cnbench/internal/testutil"
)

// figuresScenario measures every workload on the native baseline and a
// bridge, briefly.
const figuresScenario = `
name: figures
duration: 300ms
warmup: 0s
samples: 3
modes: [host, bridge]
topologies: [chc]
workloads:
  - {type: tcp_stream, flows: 4}
  - tcp_rr
  - tcp_crr
  - {type: udp_stream, rate: 200M}
  - udp_max_rate
  - udp_rr
  - {type: ping, interval: 10ms}
`

// rawCase is a case as the database holds it, read with plain SQL.
type rawCase struct {
	index                            int
	mode, topology, workload, engine string
	params, status                   string
	values                           []map[string]float64
	hists                            []*hdrhistogram.Histogram // the samples' non-empty latency histograms
	// sampleHists are the samples' latency histograms in sample order,
	// nil where a sample has none or an empty one.
	sampleHists []*hdrhistogram.Histogram
	paired      bool // the case took its samples in turns with host
}

// jsonFigures is what the test reads of `report --format json`.
type jsonFigures struct {
	Cases []struct {
		Index    int    `json:"index"`
		Mode     string `json:"mode"`
		Workload string `json:"workload"`
		Status   string `json:"status"`
		Metrics  map[string]struct {
			Mean, Stddev, Min, Max float64
			CI95Low                float64 `json:"ci95_low"`
			CI95High               float64 `json:"ci95_high"`
			N                      int
			Unit                   string
		} `json:"metrics"`
		OverheadPct map[string]float64 `json:"overhead_pct"`
		VsHostPct   map[string]float64 `json:"vs_host_pct"`
		VsHostRatio map[string]struct {
			Ratio          float64
			CI95Low        float64 `json:"ci95_low"`
			CI95High       float64 `json:"ci95_high"`
			ChangePct      float64 `json:"change_pct"`
			ChangeCI95Low  float64 `json:"change_ci95_low"`
			ChangeCI95High float64 `json:"change_ci95_high"`
			N              int
			Paired         bool
			Verdict        string
		} `json:"vs_host_ratio"`
	} `json:"cases"`
}

// TestReportFiguresRecomputed runs every workload on host and bridge and
// recomputes each figure the JSON report gives and each value a chart
// plots, with its axis label, from the raw samples in the database, by
// the simple arithmetic below rather than the report's code.
func TestReportFiguresRecomputed(t *testing.T) {
	testutil.RequireRoot(t)
	t.Parallel() // its figures are recomputed from its own samples, whatever the load: it runs beside the study suites
	dir := t.TempDir()
	file, db := writeScenario(t, dir, "figures.yaml", figuresScenario), filepath.Join(dir, "figures.db")
	code, out, stderr := runCLI(t, "run", file, "--db", db, "--quiet", "--order", "sequential")
	if code != exitOK {
		t.Fatalf("run: exit %d:\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "report", "--db", db, "--format", "json")
	if code != exitOK {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	var rep jsonFigures
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	raw := readRawCases(t, db)
	if len(rep.Cases) != len(raw) || len(raw) != 14 {
		t.Fatalf("report has %d cases, the database %d; want 14", len(rep.Cases), len(raw))
	}
	want := make([]map[string]summary, len(raw))
	for i, c := range raw {
		jc := rep.Cases[i]
		if jc.Index != c.index || jc.Mode != c.mode || jc.Workload != c.workload || jc.Status != c.status {
			t.Fatalf("report case %d is %d %s %s %s, the database's %d %s %s %s", i, jc.Index, jc.Mode, jc.Workload, jc.Status,
				c.index, c.mode, c.workload, c.status)
		}
		if c.status != "ok" {
			t.Errorf("case %d (%s %s) is %s", c.index, c.mode, c.workload, c.status)
		}
		want[i] = caseFigures(c)
		for name, w := range want[i] {
			got, ok := jc.Metrics[name]
			g := summary{got.Mean, got.Stddev, got.Min, got.Max, got.CI95Low, got.CI95High, got.N}
			if !ok || !w.near(g) {
				t.Errorf("case %d %s %s: %s is %+v, recomputed %+v", c.index, c.mode, c.workload, name, g, w)
			}
			if u, ok := unitByName(name); ok && got.Unit != u {
				t.Errorf("case %d: %s in %q, want %q", c.index, name, got.Unit, u)
			}
		}
		if len(jc.Metrics) != len(want[i]) {
			t.Errorf("case %d %s %s: %d metrics in the report, %d recomputed", c.index, c.mode, c.workload, len(jc.Metrics), len(want[i]))
		}
	}
	var metrics int
	for _, m := range want {
		metrics += len(m)
	}
	t.Logf("%d cases, %d metrics checked", len(raw), metrics)
	for i, c := range raw {
		wantOver, wantVs := overheads(raw, want, c)
		if !nearMaps(rep.Cases[i].OverheadPct, wantOver) || !nearMaps(rep.Cases[i].VsHostPct, wantVs) {
			t.Errorf("case %d %s %s: overhead %v and vs host %v, recomputed %v and %v", c.index, c.mode, c.workload,
				rep.Cases[i].OverheadPct, rep.Cases[i].VsHostPct, wantOver, wantVs)
		}
		wantRatios := ratios(raw, want, c)
		if len(rep.Cases[i].VsHostRatio) != len(wantRatios) {
			t.Errorf("case %d %s %s: %d ratios against host, recomputed %d", c.index, c.mode, c.workload,
				len(rep.Cases[i].VsHostRatio), len(wantRatios))
		}
		for name, w := range wantRatios {
			g := rep.Cases[i].VsHostRatio[name]
			got := ratio{g.Ratio, g.CI95Low, g.CI95High, g.N, g.Paired, g.Verdict}
			pct := [3]float64{(w.r - 1) * 100, (w.lo - 1) * 100, (w.hi - 1) * 100}
			if !w.near(got) || !near(g.ChangePct, pct[0]) || !near(g.ChangeCI95Low, pct[1]) || !near(g.ChangeCI95High, pct[2]) {
				t.Errorf("case %d %s %s: %s against host %+v, recomputed %+v", c.index, c.mode, c.workload, name, g, w)
			}
		}
	}
	checkCharts(t, db, raw, want)
}

// readRawCases reads the latest run's cases and samples straight from
// the tables.
func readRawCases(t *testing.T, path string) []rawCase {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, case_index, mode, topology, workload, engine, params, status, outcome FROM cases
		WHERE run_id = (SELECT MAX(id) FROM runs) ORDER BY case_index`)
	if err != nil {
		t.Fatal(err)
	}
	var out []rawCase
	var ids []int64
	for rows.Next() {
		var c rawCase
		var id int64
		var outcome string
		if err := rows.Scan(&id, &c.index, &c.mode, &c.topology, &c.workload, &c.engine, &c.params, &c.status, &outcome); err != nil {
			t.Fatal(err)
		}
		var o struct{ Paired bool }
		if err := json.Unmarshal([]byte(outcome), &o); err != nil {
			t.Fatal(err)
		}
		c.paired = o.Paired
		out, ids = append(out, c), append(ids, id)
	}
	rows.Close()
	for i, id := range ids {
		samples, err := db.Query(`SELECT metric_values, latency_hdr FROM samples WHERE case_id = ? ORDER BY sample_index`, id)
		if err != nil {
			t.Fatal(err)
		}
		for samples.Next() {
			var values string
			var hdr []byte
			if err := samples.Scan(&values, &hdr); err != nil {
				t.Fatal(err)
			}
			v := map[string]float64{}
			if err := json.Unmarshal([]byte(values), &v); err != nil {
				t.Fatal(err)
			}
			out[i].values = append(out[i].values, v)
			out[i].sampleHists = append(out[i].sampleHists, nil)
			if len(hdr) > 0 {
				h, err := hdrhistogram.Decode(hdr)
				if err != nil {
					t.Fatal(err)
				}
				if h.TotalCount() > 0 {
					out[i].hists = append(out[i].hists, h)
					out[i].sampleHists[len(out[i].sampleHists)-1] = h
				}
			}
		}
		samples.Close()
	}
	return out
}

// summary is a metric's figures: mean, sample standard deviation, range,
// 95% interval and count.
type summary struct {
	mean, sd, min, max, lo, hi float64
	n                          int
}

// t975 is Student's t at 97.5% for 1 to 10 degrees of freedom, from the
// printed tables.
var t975 = []float64{12.7062047, 4.30265273, 3.18244631, 2.77644511, 2.57058184, 2.44691185, 2.36462425, 2.30600414, 2.26215716, 2.22813885}

func summarise(xs []float64) summary {
	s := summary{n: len(xs), min: math.Inf(1), max: math.Inf(-1)}
	for _, x := range xs {
		s.mean += x / float64(len(xs))
		s.min, s.max = math.Min(s.min, x), math.Max(s.max, x)
	}
	s.lo, s.hi = s.mean, s.mean
	if len(xs) < 2 {
		return s
	}
	for _, x := range xs {
		s.sd += (x - s.mean) * (x - s.mean) / float64(len(xs)-1)
	}
	s.sd = math.Sqrt(s.sd)
	half := t975[len(xs)-2] * s.sd / math.Sqrt(float64(len(xs)))
	s.lo, s.hi = s.mean-half, s.mean+half
	return s
}

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*math.Max(math.Abs(a), math.Abs(b))+1e-9
}

func (s summary) near(o summary) bool {
	return s.n == o.n && near(s.mean, o.mean) && near(s.sd, o.sd) && near(s.min, o.min) && near(s.max, o.max) &&
		near(s.lo, o.lo) && near(s.hi, o.hi)
}

func nearMaps(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || !near(v, w) {
			return false
		}
	}
	return true
}

// latencyQuantiles are the percentile metrics and their quantiles.
var latencyQuantiles = map[string]float64{"latency_p50_us": 50, "latency_p90_us": 90, "latency_p99_us": 99, "latency_p999_us": 99.9}

// caseFigures recomputes a case's metrics. Latency comes from the
// samples' histograms where they have them: the percentile of all samples
// merged, with an interval as wide as that of the per-sample percentiles.
func caseFigures(c rawCase) map[string]summary {
	out := map[string]summary{}
	for name, xs := range perSample(c) {
		var present []float64
		for _, x := range xs {
			if !math.IsNaN(x) {
				present = append(present, x)
			}
		}
		out[name] = summarise(present)
	}
	if len(c.hists) == 0 {
		return out
	}
	merged := mergeAll(c.hists)
	whole := map[string]float64{"latency_mean_us": merged.Mean() / 1000}
	for name, q := range latencyQuantiles {
		whole[name] = float64(merged.ValueAtQuantile(q)) / 1000
	}
	for name, w := range whole {
		s := out[name]
		half := (s.hi - s.lo) / 2
		s.mean, s.lo, s.hi = w, w-half, w+half
		out[name] = s
	}
	return out
}

// mergeAll merges histograms into one that covers them all.
func mergeAll(hs []*hdrhistogram.Histogram) *hdrhistogram.Histogram {
	lo, hi, digits := hs[0].LowestTrackableValue(), hs[0].HighestTrackableValue(), hs[0].SignificantFigures()
	for _, h := range hs {
		lo, hi, digits = min(lo, h.LowestTrackableValue()), max(hi, h.HighestTrackableValue()), max(digits, h.SignificantFigures())
	}
	m := hdrhistogram.New(lo, hi, int(digits))
	for _, h := range hs {
		m.Merge(h)
	}
	return m
}

// unitByName is the unit a metric's name spells, where it spells one.
func unitByName(name string) (string, bool) {
	switch {
	case name == "cpu_s_per_gb":
		return "s/GB", true
	case strings.HasSuffix(name, "_bps"):
		return "bit/s", true
	case strings.HasSuffix(name, "_us") || strings.HasSuffix(name, "_us_per_tx"):
		return "us", true
	case strings.HasSuffix(name, "_per_s"):
		return "1/s", true
	}
	return "", false
}

// overheads recomputes a case's cost against its host case (positive is
// worse) and its change against it, per metric.
func overheads(raw []rawCase, want []map[string]summary, c rawCase) (over, vs map[string]float64) {
	if c.mode == "host" {
		return nil, nil
	}
	for j, h := range raw {
		if h.mode != "host" || h.topology != c.topology || h.workload != c.workload || h.engine != c.engine || !sameParams(h.params, c.params) {
			continue
		}
		over, vs = map[string]float64{}, map[string]float64{}
		for name, s := range want[indexOf(raw, c)] {
			base, ok := want[j][name]
			info, known := model.Metrics[name]
			if !ok || !known || base.mean == 0 {
				continue
			}
			vs[name] = (s.mean - base.mean) / base.mean * 100
			over[name] = vs[name]
			if info.HigherIsBetter {
				over[name] = -vs[name]
			}
		}
		return over, vs
	}
	return nil, nil
}

func indexOf(raw []rawCase, c rawCase) int {
	for i := range raw {
		if raw[i].index == c.index {
			return i
		}
	}
	return -1
}

// sameParams compares two cases' stored parameters, leaving out what
// only one mode records.
func sameParams(a, b string) bool {
	var pa, pb map[string]any
	if json.Unmarshal([]byte(a), &pa) != nil || json.Unmarshal([]byte(b), &pb) != nil {
		return false
	}
	for _, k := range []string{"datapath", "mode_config"} {
		delete(pa, k)
		delete(pb, k)
	}
	// Marshalled maps list their keys in order.
	ja, _ := json.Marshal(pa)
	jb, _ := json.Marshal(pb)
	return string(ja) == string(jb)
}

// chartAxis is what a chart of the primary metric of a workload plots:
// its metric, its axis label, and the factor from the stored unit.
var chartAxis = map[string]struct {
	metric, label string
	scale         float64
}{
	"tcp_stream":   {"throughput_bps", "throughput (Gbit/s)", 1e-9},
	"udp_stream":   {"throughput_bps", "throughput (Gbit/s)", 1e-9},
	"udp_max_rate": {"max_rate_bps", "max rate (Gbit/s)", 1e-9},
	"tcp_rr":       {"transactions_per_s", "transaction rate (per second)", 1},
	"udp_rr":       {"transactions_per_s", "transaction rate (per second)", 1},
	"tcp_crr":      {"connections_per_s", "connection rate (per second)", 1},
	"ping":         {"rtt_avg_us", "mean round trip (µs)", 1},
}

// checkCharts requires every chart of the run to plot what the raw
// samples give, under the right axis label, and every chart the samples
// call for to be there.
func checkCharts(t *testing.T, db string, raw []rawCase, want []map[string]summary) {
	t.Helper()
	charts, err := report.Charts(report.Build(storedRun(t, db, 1)), "")
	if err != nil {
		t.Fatal(err)
	}
	seen, checked := map[string]bool{}, 0
	for _, ch := range charts {
		checked += len(ch.Values)
		w, _, _ := strings.Cut(ch.Title, ":")
		seen[ch.Kind+" "+w] = true
		label, values := expectedChart(t, ch.Kind, w, raw, want)
		if ch.YLabel != label {
			t.Errorf("%s: value axis %q, want %q", ch.ID, ch.YLabel, label)
		}
		if len(ch.Values) != len(values) {
			t.Errorf("%s: %d values plotted, want %d", ch.ID, len(ch.Values), len(values))
		}
		for _, v := range ch.Values {
			// A CDF's points are its quantiles, the y values; other
			// charts' are a mode's bar in a group, or at an x.
			key := fmt.Sprintf("%s %s %g", v.Series, v.Group, v.X)
			if ch.Kind == "cdf" {
				key = fmt.Sprintf("%s y=%g", v.Series, v.Y)
			}
			e, ok := values[key]
			if !ok || !near(v.X, e.X) || !near(v.Y, e.Y) || !near(v.Low, e.Low) || !near(v.High, e.High) {
				t.Errorf("%s: %s plotted (%.6g, %.6g [%.6g, %.6g]), recomputed (%.6g, %.6g [%.6g, %.6g])", ch.ID, key,
					v.X, v.Y, v.Low, v.High, e.X, e.Y, e.Low, e.High)
			}
		}
	}
	t.Logf("%d charts, %d plotted values checked", len(charts), checked)
	for w := range chartAxis {
		for _, kind := range []string{"bars", "overhead"} {
			if !seen[kind+" "+w] {
				t.Errorf("no %s chart for %s", kind, w)
			}
		}
	}
	for _, kind := range []string{"cpu tcp_stream", "cpu udp_stream", "cpu tcp_rr", "cpu udp_rr", "cpu tcp_crr", "latency tcp_rr", "cdf udp_rr", "flowspread tcp_stream"} {
		if !seen[kind] {
			t.Errorf("no %s chart", kind)
		}
	}
}

// plotted is one value a chart should plot, with its error bar.
type plotted struct{ X, Y, Low, High float64 }

// bar is how a bar shows a summary in scale: its mean, and the interval
// cut at zero, when there is one to draw.
func bar(s summary, scale float64, interval bool) plotted {
	p := plotted{0, s.mean * scale, s.mean * scale, s.mean * scale}
	if interval && s.n > 1 {
		p.Low, p.High = math.Max(s.lo*scale, 0), s.hi*scale
	}
	return p
}

// expectedChart recomputes the label and values of a chart of kind for
// workload w, keyed by series, group and x.
func expectedChart(t *testing.T, kind, w string, raw []rawCase, want []map[string]summary) (string, map[string]plotted) {
	axis := chartAxis[w]
	values := map[string]plotted{}
	for i, c := range raw {
		if c.workload != w {
			continue
		}
		key := c.mode + " " + c.topology + " 0"
		switch kind {
		case "bars":
			values[key] = bar(want[i][axis.metric], axis.scale, true)
		case "overhead":
			if r, ok := ratios(raw, want, c)[axis.metric]; ok {
				values[key] = overheadBar(r, model.Metrics[axis.metric].HigherIsBetter)
			}
		case "cpu":
			if s, ok := want[i]["cpu_s_per_gb"]; ok {
				// CPU seconds per GB times 0.125 GB/s (1 Gbit/s) are cores.
				values[key] = bar(s, 0.125, true)
				if w == "tcp_stream" {
					requireCoresPerGbit(t, c, s.mean*0.125)
				}
			} else if s, ok := want[i]["cpu_us_per_tx"]; ok {
				values[key] = bar(s, 1, true)
			}
		case "latency":
			for name, q := range latencyQuantiles {
				values[fmt.Sprintf("%s p%g 0", c.mode, q)] = bar(want[i][name], 1, true)
			}
		case "flowspread":
			for g, name := range []string{"slowest", "p10", "median", "p90", "fastest"} {
				metric := []string{"flow_throughput_min_bps", "flow_throughput_p10_bps", "flow_throughput_median_bps", "flow_throughput_p90_bps", "flow_throughput_max_bps"}[g]
				values[fmt.Sprintf("%s %s 0", c.mode, name)] = bar(want[i][metric], 1e-9, true)
			}
		case "cdf":
			merged := mergeAll(c.hists)
			for _, q := range cdfPoints() {
				x := math.Max(float64(merged.ValueAtQuantile(q))/1000, 0.001)
				values[fmt.Sprintf("%s y=%g", c.mode, q/100)] = plotted{x, q / 100, q / 100, q / 100}
			}
		default:
			t.Errorf("chart kind %s of %s is not checked", kind, w)
		}
	}
	switch kind {
	case "overhead":
		return "overhead against host (%)", values
	case "cpu":
		if _, ok := want[indexOfWorkload(raw, w)]["cpu_s_per_gb"]; ok {
			return "stream CPU cost (cores per Gbit/s)", values
		}
		return "CPU time per transaction (µs)", values
	case "latency":
		return "latency (µs)", values
	case "cdf":
		return "fraction of transactions", values
	case "flowspread":
		return "throughput of one flow (Gbit/s)", values
	}
	return axis.label, values
}

func indexOfWorkload(raw []rawCase, w string) int {
	for i, c := range raw {
		if c.workload == w {
			return i
		}
	}
	return -1
}

// cdfPoints are the quantiles a CDF line is drawn through: every percent,
// then finer into the tail.
func cdfPoints() []float64 {
	var qs []float64
	for q := 0.0; q < 99; q++ {
		qs = append(qs, q)
	}
	return append(qs, 99, 99.2, 99.4, 99.5, 99.6, 99.7, 99.8, 99.9, 99.95, 99.99, 100)
}

// requireCoresPerGbit holds a TCP stream's cpu bar to what its own CPU
// and throughput figures give: the sender's and receiver's share of a
// core, over the Gbit/s. The figures are timed over slightly different
// spans, so they need only agree within a factor of two; a wrong unit is
// off by far more.
func requireCoresPerGbit(t *testing.T, c rawCase, cores float64) {
	t.Helper()
	var sum float64
	for _, v := range c.values {
		sum += (v["cpu_sender_pct"] + v["cpu_receiver_pct"]) / 100 / (v["throughput_bps"] / 1e9)
	}
	byCPU := sum / float64(len(c.values))
	if cores < byCPU/2 || cores > byCPU*2 {
		t.Errorf("%s %s: cpu chart gives %.4g cores per Gbit/s, the CPU shares over the throughput %.4g", c.mode, c.workload, cores, byCPU)
	}
}
