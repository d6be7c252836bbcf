// Package validate holds cnbench's own numbers against the tools users
// already trust and against the kernel's counters: per mode, the native
// engine's throughput against iperf3's, its round trip against sockperf's,
// and the bytes each engine reports against the payload the interfaces
// counted. A disagreement beyond a threshold is a finding.
package validate

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"cnbench/internal/model"
	"cnbench/internal/stats"
)

// Thresholds are the relative disagreements tolerated.
type Thresholds struct {
	Throughput float64 // default 0.05
	Latency    float64 // default 0.10
	Wire       float64 // default 0.02
}

// DefaultThresholds are those of `cnbench validate` without flags.
var DefaultThresholds = Thresholds{Throughput: 0.05, Latency: 0.10, Wire: 0.02}

// Check is one comparison.
type Check struct {
	Mode, Topology string
	What           string  // e.g. "throughput native/iperf3"
	A, B           float64 // the two medians compared
	Unit           string
	Ratio          float64
	// Low and High bound the 95% confidence interval of the ratio from
	// the samples paired by index (the engines take turns, so sample i
	// of each ran side by side); both zero with fewer than two pairs.
	Low, High float64
	Limit     float64 // tolerated |ratio - 1|
	// Missing says why a comparison could not be made, such as a tool
	// not installed or a case that failed.
	Missing string
}

// OK reports whether the check passed; a missing comparison is not a
// failure but is shown as such.
func (c Check) OK() bool { return c.Missing != "" || math.Abs(c.Ratio-1) <= c.Limit }

// Compare derives the checks from a run of the validation scenario.
func Compare(res *model.RunResult, th Thresholds) []Check {
	type key struct{ mode, topo string }
	var keys []key
	seen := map[key]bool{}
	for _, c := range res.Cases {
		k := key{c.Mode, c.Topology}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	var checks []Check
	for _, k := range keys {
		got := func(workload, engine, metric string) ([]float64, string) {
			return measured(res, k.mode, k.topo, workload, engine, metric)
		}
		pair := func(what, unit string, limit float64, workload, metric, engineB string, scale float64) {
			xa, whyA := got(workload, "native", metric)
			xb, whyB := got(workload, engineB, metric)
			c := Check{Mode: k.mode, Topology: k.topo, What: what, Unit: unit, Limit: limit}
			switch {
			case whyA != "":
				c.Missing = whyA
			case whyB != "":
				c.Missing = whyB
			default:
				a, b := Median(slices.Clone(xa)), Median(slices.Clone(xb))
				c.A, c.B, c.Ratio = a*scale, b*scale, a/b
				c.Low, c.High = pairedInterval(xa, xb)
			}
			checks = append(checks, c)
		}
		pair("throughput native/iperf3", "Gbit/s", th.Throughput, "tcp_stream", model.ThroughputBPS, "iperf3", 1e-9)
		pair("tcp mean round trip native/sockperf", "us", th.Latency, "tcp_rr", model.LatencyMeanUS, "sockperf", 1)
		pair("udp mean round trip native/sockperf", "us", th.Latency, "udp_rr", model.LatencyMeanUS, "sockperf", 1)
		for _, engine := range []string{"native", "iperf3"} {
			c := Check{Mode: k.mode, Topology: k.topo, What: "received bytes/wire payload, " + engine, B: 1, Unit: "ratio", Limit: th.Wire}
			xs, why := got("tcp_stream", engine, model.AppWireRatio)
			if c.Missing = why; why == "" {
				c.A = Median(xs)
				c.Ratio = c.A
			}
			checks = append(checks, c)
		}
	}
	return checks
}

// measured is a metric's values over the samples of the matching case, in
// sample order, or why there are none.
func measured(res *model.RunResult, mode, topo, workload, engine, metric string) ([]float64, string) {
	for _, c := range res.Cases {
		if c.Mode != mode || c.Topology != topo || c.Workload != workload || c.Engine != engine {
			continue
		}
		if c.Status != model.StatusOK {
			return nil, fmt.Sprintf("%s %s: %s %s", engine, workload, c.Status, c.Reason)
		}
		var xs []float64
		for _, s := range c.Samples {
			if v, ok := s.Values[metric]; ok {
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 {
			return nil, fmt.Sprintf("%s %s: no %s measured", engine, workload, metric)
		}
		return xs, ""
	}
	return nil, fmt.Sprintf("%s %s: not run", engine, workload)
}

// pairedInterval is the 95% confidence interval of a[i]/b[i] over the
// pairs both have; zeros with fewer than two.
func pairedInterval(a, b []float64) (low, high float64) {
	var ratios []float64
	for i := range min(len(a), len(b)) {
		if b[i] != 0 {
			ratios = append(ratios, a[i]/b[i])
		}
	}
	if len(ratios) < 2 {
		return 0, 0
	}
	s := stats.Summarize(ratios)
	return s.CI95Low, s.CI95High
}

// Median of xs, which it sorts.
func Median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[n/2]
}
