// Package validate holds cnbench's own numbers against the kernel's
// counters and against the tools users already trust. Two kinds of
// check, judged differently:
//
//   - accuracy: the bytes each stream engine reports against the payload
//     the receiver's interfaces counted, and the UDP loss the native
//     engine reports against the requests the kernel delivered. The
//     counters are the truth; a breach means an engine's number is wrong.
//   - comparability: the native engine's throughput and round trips
//     against iperf3's, netperf's and sockperf's on the same path. Slower
//     than a reference beyond the threshold, by the whole 95% interval of
//     the paired ratio, means the native engine is the bottleneck; a
//     ratio beyond it whose interval is not is undecided, and shown so.
//     Faster means the reference was, and is reported with every
//     engine's CPU, not held against the native engine.
package validate

import (
	"fmt"
	"math"
	"slices"

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

// Kind is what a check vouches for.
type Kind string

const (
	// Accuracy holds an engine's number to the kernel's counters.
	Accuracy Kind = "accuracy"
	// Comparability holds the native engine to another engine.
	Comparability Kind = "comparability"
)

// CPU is one engine's mean sender and receiver CPU over its samples, in %
// of one core; zero where not measured.
type CPU struct{ Sender, Receiver float64 }

// busiest is the busier side's share of a core.
func (c CPU) busiest() float64 { return max(c.Sender, c.Receiver) }

// CPUBound is the share of a core at which a side counts as CPU-bound.
const CPUBound = 90

// Check is one comparison.
type Check struct {
	Mode, Topology string
	Kind           Kind
	What           string // e.g. "throughput native/iperf3"
	// A and B are the means compared; for the bytes against the wire
	// counters the median ratio and 1, and for the UDP loss the engine's
	// and the kernel's mean loss in %.
	A, B float64
	Unit string
	// Ratio is the geometric mean of the per-turn ratios A[i]/B[i] (the
	// engines take turns, so sample i of each ran side by side), and Low
	// and High bound its 95% confidence interval; both zero with fewer
	// than two turns, when Ratio is A/B.
	Ratio     float64
	Low, High float64
	Limit     float64 // tolerated |ratio - 1|
	// OneSided: only a ratio below 1 - Limit fails (throughput: the
	// native engine slower than the reference); above 1 + Limit the
	// reference was the slower one.
	OneSided bool
	// Native and Reference are the engines' CPU on a throughput check.
	Native, Reference CPU
	// Missing says why a comparison could not be made, such as a tool
	// not installed or a case that failed.
	Missing string
	// By names the other reference engine of the same metric that
	// vouches for the native engine where this one does not: the native
	// engine is within the threshold of it, or lies between the two (see
	// judgeTogether); Between says which. BySettled says that the other
	// interval, or both, lie where that verdict needs them.
	By        string
	Between   bool
	BySettled bool
	// reference is the engine compared against, and metric what.
	reference, metric string
}

// OK reports whether the check passed: all but a failure. A missing
// comparison is not a failure but is shown as such, and neither is an
// undecided one.
func (c Check) OK() bool { return !c.Failed() }

// agrees reports whether the ratio itself passes: within the limit,
// faster, or vouched for by another reference.
func (c Check) agrees() bool { return c.Missing != "" || c.Within() || c.Faster() || c.By != "" }

// Failed reports whether the check failed. An accuracy check fails on its
// ratio: the counters are exact. A comparability check fails only once
// its whole 95% interval lies beyond the limit: the engines' samples
// spread, and a ratio just beyond the limit whose interval reaches back
// within it is as likely a draw of that spread as a difference of the
// engines (the intervals of two runs in a row differ as much as their
// widths say, and a healthy engine's rows at the limit crossed it in
// about half of the runs). That one is Undecided. A single turn has no
// interval to weigh its ratio by, and fails on it.
func (c Check) Failed() bool {
	if c.agrees() {
		return false
	}
	return c.Kind == Accuracy || c.High == 0 || c.Settled()
}

// Undecided reports whether a comparability check's ratio lies beyond the
// limit while its interval still reaches within it, after every turn the
// path was given.
func (c Check) Undecided() bool {
	return c.Kind == Comparability && c.High > 0 && !c.agrees() && !c.Settled()
}

// Within reports whether the ratio lies within the limit.
func (c Check) Within() bool { return c.Missing == "" && math.Abs(c.Ratio-1) <= c.Limit }

// Faster reports whether a one-sided check found the native engine
// faster than the reference beyond the limit: the reference, not the
// native engine, was the bottleneck.
func (c Check) Faster() bool { return c.Missing == "" && c.OneSided && c.Ratio > 1+c.Limit }

// comparison is one engine-against-engine check: the native engine's
// metric over the reference engine's on one workload.
type comparison struct {
	what, unit string
	limit      func(Thresholds) float64
	workload   string
	metric     string
	reference  string
	scale      float64 // from the metric's unit to the shown one
	oneSided   bool    // only the native engine behind fails
}

var comparisons = []comparison{
	{"throughput native/iperf3", "Gbit/s", throughputLimit, "tcp_stream", model.ThroughputBPS, "iperf3", 1e-9, true},
	{"throughput native/netperf", "Gbit/s", throughputLimit, "tcp_stream", model.ThroughputBPS, "netperf", 1e-9, true},
	{"tcp mean round trip native/sockperf", "us", latencyLimit, "tcp_rr", model.LatencyMeanUS, "sockperf", 1, false},
	{"tcp mean round trip native/netperf", "us", latencyLimit, "tcp_rr", model.LatencyMeanUS, "netperf", 1, false},
	{"udp mean round trip native/sockperf", "us", latencyLimit, "udp_rr", model.LatencyMeanUS, "sockperf", 1, false},
	{"udp mean round trip native/netperf", "us", latencyLimit, "udp_rr", model.LatencyMeanUS, "netperf", 1, false},
}

// wireEngines are the engines whose stream bytes are held to the
// interface counters.
var wireEngines = []string{"native", "iperf3", "netperf"}

// lossEngines are the engines whose udp_rr loss is held to the kernel's
// UDP counters: those that report a loss there (sockperf and netperf
// report none).
var lossEngines = []string{"native"}

func throughputLimit(th Thresholds) float64 { return th.Throughput }
func latencyLimit(th Thresholds) float64    { return th.Latency }

// compare fills c from the two engines' values in sample order.
func (cmp comparison) compare(c *Check, native, reference []float64) {
	a, b := stats.Summarize(native).Mean, stats.Summarize(reference).Mean
	c.A, c.B, c.Ratio = a*cmp.scale, b*cmp.scale, a/b
	if perTurn, ok := pairedRatios(native, reference); ok {
		c.Ratio, c.Low, c.High = perTurn.Ratio, perTurn.Low, perTurn.High
	}
}

// source reads a path's samples: a metric's values for a workload and
// engine, or why there are none.
type source func(workload, engine, metric string) ([]float64, string)

// check is the comparison on one path.
func (cmp comparison) check(c Check, got source, th Thresholds) Check {
	c.Kind, c.What, c.Unit, c.Limit, c.OneSided = Comparability, cmp.what, cmp.unit, cmp.limit(th), cmp.oneSided
	c.reference, c.metric = cmp.reference, cmp.workload+"/"+cmp.metric
	xa, whyA := got(cmp.workload, "native", cmp.metric)
	xb, whyB := got(cmp.workload, cmp.reference, cmp.metric)
	switch {
	case whyA != "":
		c.Missing = whyA
	case whyB != "":
		c.Missing = whyB
	default:
		cmp.compare(&c, xa, xb)
	}
	if cmp.oneSided {
		c.Native, c.Reference = cpuOf(got, cmp.workload, "native"), cpuOf(got, cmp.workload, cmp.reference)
	}
	return c
}

// cpuOf is an engine's mean sender and receiver CPU on a workload.
func cpuOf(got source, workload, engine string) CPU {
	mean := func(metric string) float64 {
		if xs, why := got(workload, engine, metric); why == "" {
			return stats.Summarize(xs).Mean
		}
		return 0
	}
	return CPU{mean(model.CPUSenderPct), mean(model.CPUReceiverPct)}
}

// wireCheck holds an engine's stream bytes to the interface counters:
// the median over the samples of its received bytes over the TCP
// payload the receiver's interfaces counted.
func wireCheck(c Check, got source, engine string, th Thresholds) Check {
	c.Kind, c.What, c.B, c.Unit, c.Limit = Accuracy, "received bytes/wire payload, "+engine, 1, "ratio", th.Wire
	xs, why := got("tcp_stream", engine, model.AppWireRatio)
	if c.Missing = why; why == "" {
		c.A = stats.Median(xs)
		c.Ratio = c.A
	}
	return c
}

// lossCheck holds an engine's udp_rr loss to the kernel's: the median
// over the samples of the share it says was answered over the share of
// requests the kernel delivered to the server, (100 - loss_pct) over
// (100 - udp_kernel_loss_pct). A and B are the mean losses in %.
func lossCheck(c Check, got source, engine string, th Thresholds) Check {
	c.Kind, c.What, c.Unit, c.Limit = Accuracy, "udp loss/kernel counters, "+engine, "% lost", th.Wire
	loss, why := got("udp_rr", engine, model.LossPct)
	kernel, whyK := got("udp_rr", engine, model.UDPKernelLossPct)
	if why == "" {
		why = whyK
	}
	if c.Missing = why; why != "" {
		return c
	}
	var ratios []float64
	for i := range min(len(loss), len(kernel)) {
		if kernel[i] < 100 {
			ratios = append(ratios, (100-loss[i])/(100-kernel[i]))
		}
	}
	if len(ratios) == 0 {
		c.Missing = "the kernel delivered no request"
		return c
	}
	c.A, c.B = stats.Summarize(loss).Mean, stats.Summarize(kernel).Mean
	c.Ratio = stats.Median(ratios)
	return c
}

// Compare derives the checks from a run of the validation scenario:
// per path, the comparability checks, then the accuracy checks.
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
		// A workload the run did not ask for has no checks: a run of
		// the stream alone says nothing of round trips.
		ran := func(workload string) bool {
			return slices.ContainsFunc(res.Cases, func(c model.CaseResult) bool {
				return c.Mode == k.mode && c.Topology == k.topo && c.Workload == workload
			})
		}
		path := Check{Mode: k.mode, Topology: k.topo}
		first := len(checks)
		for _, cmp := range comparisons {
			if ran(cmp.workload) {
				checks = append(checks, cmp.check(path, got, th))
			}
		}
		judgeTogether(checks[first:])
		if ran("tcp_stream") {
			for _, engine := range wireEngines {
				checks = append(checks, wireCheck(path, got, engine, th))
			}
		}
		if ran("udp_rr") {
			for _, engine := range lossEngines {
				checks = append(checks, lossCheck(path, got, engine, th))
			}
		}
	}
	return checks
}

// Workloads are the workloads a validation runs, whose checks Compare
// derives.
var Workloads = []string{"tcp_stream", "tcp_rr", "udp_rr"}

// settledWithin reports whether the whole interval lies within the limit.
func (c Check) settledWithin() bool {
	return c.High > 0 && c.Low >= 1-c.Limit && c.High <= 1+c.Limit
}

// judgeTogether holds the native engine to the span of the reference
// engines of one metric on one path, widened by the threshold, rather
// than to each of them. Tools measure a path with their own habits:
// iperf3's receiver, for one, waits in select() before every read, and
// on some CPUs that costs its streams a tenth of the throughput netperf
// and the native engine get on the same path. Where the references
// differ so, the native engine cannot be within the threshold of both;
// it agrees when it is within the threshold of one of them, or lies
// between two. With one reference, this is the plain check.
//
// A one-sided check (throughput) is its own: the native engine behind
// the fastest reference beyond the threshold is behind this one too, and
// ahead of a reference is not held against it.
func judgeTogether(checks []Check) {
	for i := range checks {
		a := &checks[i]
		if a.Missing != "" || a.OneSided || a.settledWithin() {
			continue
		}
		for _, b := range checks {
			if b.Missing != "" || a.metric != b.metric || a.reference == b.reference {
				continue
			}
			var by, between, settled bool
			switch {
			case b.Within():
				by, settled = true, b.settledWithin()
			case (a.Ratio-1)*(b.Ratio-1) < 0:
				by, between = true, true
				settled = (a.Low > 1 && b.High > 0 && b.High < 1) || (a.High > 0 && a.High < 1 && b.Low > 1)
			}
			if a.Within() && !settled {
				continue // its own verdict already agrees; only a settled one adds
			}
			if by && (a.By == "" || (settled && !a.BySettled)) {
				a.By, a.Between, a.BySettled = b.reference, between, settled
			}
		}
	}
}

// Settled reports whether more samples would hardly change the verdict:
// the ratio and the whole 95% interval of the per-turn ratios lie on
// the same side of the limit, all within it or all beyond it; or the
// other reference that vouches for the native engine does so settled.
//
// One-sided, only the lower limit matters: the interval all above it or
// all below it.
func (c Check) Settled() bool {
	if c.Missing != "" || c.High == 0 {
		return false
	}
	if c.OneSided {
		return c.Low >= 1-c.Limit || c.High < 1-c.Limit
	}
	if c.settledWithin() {
		return true
	}
	lo, hi := 1-c.Limit, 1+c.Limit
	if c.By != "" {
		return c.BySettled
	}
	return !c.Within() && (c.High < lo || c.Low > hi)
}

// Decide is the runner's stopping rule for validation (runner.Options.
// Decide): the turns of a path end once the native engine's comparison
// with every reference there is settled.
func Decide(th Thresholds) func(cases []*model.Case, samples [][]model.Sample) bool {
	return func(cases []*model.Case, samples [][]model.Sample) bool {
		var checks []Check
		for _, cmp := range comparisons {
			var native, reference []float64
			for i, c := range cases {
				if c.Workload != cmp.workload {
					continue
				}
				switch c.Engine {
				case "native":
					native = values(samples[i], cmp.metric)
				case cmp.reference:
					reference = values(samples[i], cmp.metric)
				}
			}
			if len(native) == 0 || len(reference) == 0 {
				continue
			}
			c := Check{Limit: cmp.limit(th), OneSided: cmp.oneSided, reference: cmp.reference, metric: cmp.workload + "/" + cmp.metric}
			cmp.compare(&c, native, reference)
			checks = append(checks, c)
		}
		judgeTogether(checks)
		for _, c := range checks {
			if !c.Settled() {
				return false
			}
		}
		return len(checks) > 0
	}
}

// values is a metric over samples, where they have it.
func values(samples []model.Sample, metric string) []float64 {
	var xs []float64
	for _, s := range samples {
		if v, ok := s.Values[metric]; ok {
			xs = append(xs, v)
		}
	}
	return xs
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
		xs := values(c.Samples, metric)
		if len(xs) == 0 {
			return nil, fmt.Sprintf("%s %s: no %s measured", engine, workload, metric)
		}
		return xs, ""
	}
	return nil, fmt.Sprintf("%s %s: not run", engine, workload)
}

// ratioInterval is a ratio with the bounds of its 95% confidence interval.
type ratioInterval struct{ Ratio, Low, High float64 }

// pairedRatios is the geometric mean of a[i]/b[i] over the pairs both
// have, with its interval; false with fewer than two. The mean is taken
// of the logarithms because noise on a ratio is multiplicative: the
// arithmetic mean of per-turn ratios grows with the reference's spread
// (by about its squared coefficient of variation, 3% at a spread of
// 17%) and is not symmetric, so native/iperf3 and iperf3/native would
// not be reciprocals.
func pairedRatios(a, b []float64) (ratioInterval, bool) {
	var logs []float64
	for i := range min(len(a), len(b)) {
		if a[i] > 0 && b[i] > 0 {
			logs = append(logs, math.Log(a[i]/b[i]))
		}
	}
	if len(logs) < 2 {
		return ratioInterval{}, false
	}
	s := stats.Summarize(logs)
	return ratioInterval{math.Exp(s.Mean), math.Exp(s.CI95Low), math.Exp(s.CI95High)}, true
}
