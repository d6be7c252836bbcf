// Package report turns a stored run into summaries per case and metric,
// with overheads against the native baseline, and writes them as a text
// table, JSON, CSV or Markdown.
//
// Latency percentiles are always taken from the merged HDR histograms of
// all samples of a case. Averaging per-sample percentiles would understate
// the tail whenever samples differ, which is exactly when the tail matters.
package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/model"
	"cnbench/internal/stats"
)

// baselineMode is the mode every other mode is compared against.
const baselineMode = "host"

// baselineOf is the mode a case of mode m is compared against: host, and
// within a cluster, whose endpoints are its containers or pods, the
// nodes' own network.
func baselineOf(m string) string {
	switch {
	case strings.HasPrefix(m, "swarm:"):
		return "swarm:host"
	case strings.HasPrefix(m, "k8s:"):
		return "k8s:hostnetwork"
	}
	return baselineMode
}

// Report is the summarised form of one run.
type Report struct {
	Run   model.Run
	Cases []CaseReport
	// Warnings name measurements the report had to leave out, such as a
	// latency histogram that does not decode. They are shown by the human
	// formats and are not part of the JSON.
	Warnings []string
}

// CaseReport is one case with its metrics summarised over its samples.
type CaseReport struct {
	model.Case
	// Metrics maps metric names to their summary. For latency metrics
	// derived from histograms, Mean is the value from the merged histogram
	// while Stddev, Min, Max and the interval describe the per-sample
	// values, so Mean need not lie inside the interval.
	Metrics map[string]stats.Summary
	// OverheadPct maps metric names to the cost in percent against the
	// host case with the same topology, workload, engine and parameters.
	// Positive always means worse than native.
	OverheadPct map[string]float64
	// VsHostPct maps the same metrics to their change against that host
	// case in percent of it, signed as the metric moved: a throughput 37%
	// below host's is -37, a p99 latency 25% above it +25.
	VsHostPct map[string]float64
	// VsHost maps the same metrics to the ratio of the case to that host
	// case, with its 95% interval and verdict, where the samples give one.
	VsHost map[string]Change
	// samples holds each metric's value in each sample, in sample order,
	// NaN where a sample has none: sample i of a case that took turns
	// pairs with sample i of its host case.
	samples map[string][]float64
	// latency merges the samples' latency histograms, for the CDF chart;
	// nil for cases without transactions.
	latency *hdrhistogram.Histogram
	// Explanation is where the case's CPU time went, by path stage; nil
	// unless the case was explained.
	Explanation *Explanation
}

// Build summarises every case of res and computes overheads. Skipped and
// failed cases keep their status and reason but carry no metrics.
func Build(res *model.RunResult) *Report {
	rep := &Report{Run: res.Run, Cases: make([]CaseReport, 0, len(res.Cases))}
	for _, c := range res.Cases {
		cr := CaseReport{Case: c.Case, Explanation: explanationOf(c)}
		if c.Status != model.StatusSkipped && c.Status != model.StatusFailed {
			cr.Metrics, cr.samples, cr.latency = summarizeCase(c, &rep.Warnings)
		}
		rep.Cases = append(rep.Cases, cr)
	}
	rep.Warnings = append(rep.Warnings, accelWarnings(res)...)
	addOverheads(rep.Cases)
	addExplanationDeltas(rep.Cases)
	return rep
}

func summarizeCase(c model.CaseResult, warnings *[]string) (map[string]stats.Summary, map[string][]float64, *hdrhistogram.Histogram) {
	series, merged := sampleSeries(c, warnings)
	if len(series) == 0 {
		return nil, nil, nil
	}
	metrics := make(map[string]stats.Summary, len(series))
	for name, xs := range series {
		metrics[name] = stats.Summarize(present(xs))
	}
	if merged != nil {
		for _, p := range model.LatencyPercentiles {
			metrics[p.Name] = withMean(metrics[p.Name], nsToUS(float64(merged.ValueAtQuantile(p.Quantile))))
		}
		metrics[model.LatencyMeanUS] = withMean(metrics[model.LatencyMeanUS], nsToUS(merged.Mean()))
	}
	return metrics, series, merged
}

// sampleSeries gives each metric's value in each sample, NaN where a
// sample has none, and the merged latency histogram. Where samples carry
// histograms, the latency metrics come from them rather than from the
// values a tool reported.
func sampleSeries(c model.CaseResult, warnings *[]string) (map[string][]float64, *hdrhistogram.Histogram) {
	series, merged := latencySeries(c, warnings)
	if series == nil {
		series = map[string][]float64{}
	}
	for i, smp := range c.Samples {
		for name, v := range smp.Values {
			if merged != nil && isLatencyMetric(name) {
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				*warnings = append(*warnings, fmt.Sprintf("case %d sample %d: %s is %v, left out", c.Index, smp.Index, name, v))
				continue
			}
			setSample(series, name, len(c.Samples), i, v)
		}
	}
	return series, merged
}

// present leaves out the NaNs that stand for missing samples.
func present(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}

// addOverheads compares each non-host case with the first host case that
// differs from it in mode only.
func addOverheads(cases []CaseReport) {
	for i := range cases {
		c := &cases[i]
		if c.Mode == baselineOf(c.Mode) || len(c.Metrics) == 0 {
			continue
		}
		base := findBaseline(cases, c.Case)
		if base == nil {
			continue
		}
		for name, s := range c.Metrics {
			hostSummary, ok := base.Metrics[name]
			info, known := model.Metrics[name]
			// An unknown metric has no direction, so no meaningful sign.
			if !ok || !known || hostSummary.Mean == 0 {
				continue
			}
			if c.OverheadPct == nil {
				c.OverheadPct, c.VsHostPct = map[string]float64{}, map[string]float64{}
			}
			c.OverheadPct[name] = overheadPct(hostSummary.Mean, s.Mean, info.HigherIsBetter)
			c.VsHostPct[name] = (s.Mean - hostSummary.Mean) / hostSummary.Mean * 100
			if ch, ok := changeAgainst(c, base, name, info.HigherIsBetter); ok {
				if c.VsHost == nil {
					c.VsHost = map[string]Change{}
				}
				c.VsHost[name] = ch
			}
		}
	}
}

func findBaseline(cases []CaseReport, c model.Case) *CaseReport {
	for i := range cases {
		b := &cases[i]
		if b.Mode == baselineOf(c.Mode) && len(b.Metrics) > 0 &&
			b.Topology == c.Topology && b.Workload == c.Workload && b.Engine == c.Engine && b.Params.Comparable() == c.Params.Comparable() {
			return b
		}
	}
	return nil
}

// overheadPct is how much worse x is than host, in percent of host.
func overheadPct(host, x float64, higherIsBetter bool) float64 {
	if higherIsBetter {
		return (host - x) / host * 100
	}
	return (x - host) / host * 100
}

// metricOrder is the order metrics are listed in; names the model does not
// know follow alphabetically.
var metricOrder = []string{
	model.ThroughputBPS, model.TransactionsPerS,
	model.LatencyP50US, model.LatencyP90US, model.LatencyP99US, model.LatencyP999US, model.LatencyMeanUS,
	model.CPUSenderPct, model.CPUReceiverPct, model.CPUSoftirqPct, model.CPUStealPct, model.CPUSPerGB, model.CPUUSPerTx,
	model.SentBytes, model.ReceivedBytes, model.Retransmits,
	model.MaxRateBPS, model.ConnectionsPerS, model.ThroughputPerEndpointBPS, model.FairnessJain,
	model.FlowThroughputMinBPS, model.FlowThroughputP10BPS, model.FlowThroughputMedianBPS, model.FlowThroughputP90BPS,
	model.FlowThroughputMaxBPS, model.FlowFairnessJain,
	model.LossPct, model.JitterUS, model.OutOfOrder, model.SentPackets, model.ReceivedPackets, model.Trials,
	model.RTTMinUS, model.RTTAvgUS, model.RTTMaxUS, model.RTTMdevUS,
}

// sortedMetricNames lists the metrics of m in report order.
func sortedMetricNames(m map[string]stats.Summary) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	rank := func(name string) int {
		if i := slices.Index(metricOrder, name); i >= 0 {
			return i
		}
		return len(metricOrder)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := rank(names[i]), rank(names[j])
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	return names
}
