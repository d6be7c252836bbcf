// Command enginevs measures cnbench's native engine against iperf3,
// netperf and sockperf on the same paths, in one run, and prints the
// ratios of their medians, for each mode, CPU pinning and flow count:
//
//   - tcp_stream throughput, native / iperf3 and native / netperf
//     (target >= 1.00: the native engine is never the bottleneck)
//   - CPU-seconds per GB, native / iperf3 and native / netperf
//     (target <= 1.00)
//   - tcp_rr mean round trip, native / sockperf ping-pong and
//     native / netperf TCP_RR (target <= 1.10), one flow only
//
// The engines of a path take turns on it, sample by sample, so each
// median is of alternated runs. By default every path is measured with
// sender and receiver pinned to a core each and unpinned (left to the
// scheduler), with one flow and with -flows flows; netperf and sockperf
// run one flow per process, so multi-flow rows compare with iperf3 only.
// -cc measures each path under each congestion control it names (set on
// every engine's sockets); left empty, the engines keep the namespace's
// default, as a scenario without cc does.
// An engine that is not installed or cannot run a case shows n/a.
// Run it as root on a quiet machine: go run ./bench/enginevs
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"cnbench/bench/benchkit"
	"cnbench/internal/model"
	"cnbench/internal/runner"
	"cnbench/internal/stats"
	"cnbench/internal/store"
)

func main() {
	// This binary is also the native engine the runner starts.
	benchkit.ServeEngineIfAsked()
	modes := flag.String("modes", "host,veth,bridge,macvlan", "modes to compare on (host in chc is loopback)")
	samples := flag.Int("samples", 5, "samples per case; ratios use their medians")
	duration := flag.Duration("duration", 5*time.Second, "length of each sample (whole seconds: the tools need them)")
	db := flag.String("db", "", "keep the results in this database (default: a temporary one)")
	place := flag.String("placement", "different_cores,none", "CPU pinnings to measure, as in scenarios; none leaves it to the scheduler")
	flows := flag.Int("flows", 4, "the multi-flow rows' flow count (1 measures one flow only)")
	latency := flag.Bool("latency", true, "measure tcp_rr round trips too (sockperf idles about 2 s per sample)")
	crr := flag.Bool("crr", false, "measure tcp_crr's connection rate and CPU per connection against netperf too (netperf's TCP_CRR idles about 4 s per sample)")
	cc := flag.String("cc", "", "congestion controls to measure the streams under, comma-separated (default: the namespace's own)")
	flag.Parse()
	ctx, stop := benchkit.SignalContext()
	err := run(ctx, *modes, *samples, *duration, *place, *flows, *latency, *crr, strings.Split(*cc, ","), *db)
	stop()
	benchkit.Exit(ctx, "enginevs", err)
}

func run(ctx context.Context, modes string, samples int, duration time.Duration, place string, flows int, latency, crr bool, ccs []string, db string) error {
	doc := fmt.Sprintf(`
name: enginevs
description: the native engine against iperf3, netperf and sockperf on the same paths
duration: %dms
warmup: 1s
samples: %d
modes: [%s]
topologies: [chc]
placement: [%s]
engines: [native, iperf3, netperf, sockperf]
workloads:
`, duration.Milliseconds(), samples, modes, place)
	if latency {
		doc += "  - {type: tcp_rr, request_size: 64, response_size: 64}\n"
	}
	if crr {
		doc += "  - {type: tcp_crr, request_size: 64, response_size: 64}\n"
	}
	flowCounts := []int{1}
	if flows > 1 {
		flowCounts = append(flowCounts, flows)
	}
	for _, cc := range ccs {
		for _, f := range flowCounts {
			doc += fmt.Sprintf("  - {type: tcp_stream, flows: %d, msg_size: 128K%s}\n", f, ccParam(cc))
		}
	}
	var st *store.Store
	var err error
	if db == "" {
		var done func()
		if st, done, err = benchkit.TempStore(); err != nil {
			return err
		}
		defer done()
	} else {
		if st, err = store.Open(db); err != nil {
			return err
		}
		defer st.Close()
	}
	res, err := benchkit.Run(ctx, st, "enginevs", doc, runner.Options{Progress: os.Stderr})
	if err != nil {
		return err
	}
	printRatios(res, strings.Split(modes, ","), strings.Split(place, ","), flowCounts, ccs)
	if crr {
		printConnections(res, strings.Split(modes, ","), strings.Split(place, ","))
	}
	return failures(res)
}

// failures names each case that failed, so that a row of zeros is never
// the only sign of one (an unknown -cc fails every case it sets).
func failures(res *model.RunResult) error {
	failed := 0
	for _, c := range res.Cases {
		if c.Status != model.StatusFailed {
			continue
		}
		failed++
		fmt.Fprintf(os.Stderr, "enginevs: %s %s %s flows=%d cc=%s pinning=%s failed: %s\n",
			c.Mode, c.Workload, c.Engine, c.Params.Flows, ccLabel(c.Params.CC), pinningLabel(c.Params.Placement), c.Reason)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d cases failed", failed, len(res.Cases))
	}
	return nil
}

// ccParam is the workload parameter that sets congestion control cc, or
// nothing for the namespace's default.
func ccParam(cc string) string {
	if cc == "" {
		return ""
	}
	return ", cc: " + cc
}

// row names the cases one line of the table compares.
type row struct {
	mode, placement string
	flows           int
	cc              string // "" for the namespace's default
}

// samples of the metric over a case, in the order they were taken: the
// engines of a path took turns, so sample i of two engines ran side by side.
func samples(res *model.RunResult, r row, workload, engine, metric string) []float64 {
	for _, c := range res.Cases {
		if c.Mode != r.mode || c.Workload != workload || c.Engine != engine || c.Status != model.StatusOK ||
			pinningLabel(c.Params.Placement) != r.placement || (workload == "tcp_stream" && (c.Params.Flows != r.flows || c.Params.CC != r.cc)) {
			continue
		}
		var xs []float64
		for _, s := range c.Samples {
			if v, ok := s.Values[metric]; ok {
				xs = append(xs, v)
			}
		}
		return xs
	}
	return nil
}

func printRatios(res *model.RunResult, modes, placements []string, flowCounts []int, ccs []string) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "mode\tpinning\tflows\tcc\tnative Gbit/s\tiperf3\tnetperf\tthroughput ratio (>=1.00) iperf3\tnetperf\tpaired, 95%% CI, iperf3\t"+
		"native s/GB\tiperf3\tnetperf\tcpu ratio (<=1.00) iperf3\tnetperf\tpaired, 95%% CI, iperf3\t"+
		"native rtt us\tsockperf\tnetperf\tlatency ratio (<=1.10) sockperf\tnetperf\t\n")
	for _, m := range modes {
		for _, p := range placements {
			for _, cc := range ccs {
				for _, f := range flowCounts {
					// the round trips run once per path, under the default
					printRow(w, res, row{m, p, f, cc}, cc == ccs[0])
				}
			}
		}
	}
	w.Flush()
	fmt.Printf("medians of %d alternated samples per engine; run %d, %s\n", res.Cases[0].Params.Samples, res.Run.ID, res.Run.Env.CPUModel)
	// iperf3 3.16 and later run a thread per stream, 3.12 one for all:
	// multi-flow ratios compare different senders, so name the one used.
	fmt.Printf("references: %s\n", toolVersions(res.Run.Env.Tools, "iperf3", "netperf", "sockperf"))
	fmt.Println("paired: the geometric mean of the per-turn ratios and its 95% interval; ok: the target is met,",
		"tie: the interval holds 1 (no significant difference), MISS: the native engine is worse beyond the noise")
}

// toolVersions lists each named tool's version line as the run recorded
// it, "not found" where it had none.
func toolVersions(tools map[string]string, names ...string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		v := tools[n]
		if v == "" {
			v = "not found"
		}
		parts[i] = n + ": " + v
	}
	return strings.Join(parts, "; ")
}

func printRow(w *tabwriter.Writer, res *model.RunResult, r row, withRTT bool) {
	at := func(workload, engine, metric string) []float64 { return samples(res, r, workload, engine, metric) }
	tn, ti, tp := at("tcp_stream", "native", model.ThroughputBPS), at("tcp_stream", "iperf3", model.ThroughputBPS), at("tcp_stream", "netperf", model.ThroughputBPS)
	cn, ci, cp := at("tcp_stream", "native", model.CPUSPerGB), at("tcp_stream", "iperf3", model.CPUSPerGB), at("tcp_stream", "netperf", model.CPUSPerGB)
	var ln, ls, lp []float64
	if r.flows == 1 && withRTT {
		ln, ls, lp = at("tcp_rr", "native", model.LatencyMeanUS), at("tcp_rr", "sockperf", model.LatencyMeanUS), at("tcp_rr", "netperf", model.LatencyMeanUS)
	}
	n := func(xs []float64) measured { return measured{xs, stats.Median(xs)} }
	fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
		label(r.mode), r.placement, r.flows, ccLabel(r.cc),
		compare(n(tn), n(ti), n(tp), 1e9, 2, 1.00, true), paired(tn, ti, true),
		compare(n(cn), n(ci), n(cp), 1, 3, 1.00, false), paired(cn, ci, false),
		compare(n(ln), n(ls), n(lp), 1, 1, 1.10, false))
}

// printConnections is tcp_crr's table: the native engine's connection
// rate and CPU per connection against netperf's TCP_CRR, one flow.
func printConnections(res *model.RunResult, modes, placements []string) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "mode\tpinning\tnative conn/s\tnetperf\trate ratio (>=1.00)\tpaired, 95%% CI\t"+
		"native us/conn\tnetperf\tcpu ratio (<=1.00)\tpaired, 95%% CI\t\n")
	for _, m := range modes {
		for _, p := range placements {
			r := row{mode: m, placement: p, flows: 1}
			at := func(engine, metric string) measured {
				xs := samples(res, r, "tcp_crr", engine, metric)
				return measured{xs, stats.Median(xs)}
			}
			rn, rp := at("native", model.ConnectionsPerS), at("netperf", model.ConnectionsPerS)
			cn, cp := at("native", model.CPUUSPerTx), at("netperf", model.CPUUSPerTx)
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", label(m), p,
				median(rn, 1, 0), median(rp, 1, 0), ratio(rn.median, rp.median, 1.00, true), paired(rn.samples, rp.samples, true),
				median(cn, 1, 1), median(cp, 1, 1), ratio(cn.median, cp.median, 1.00, false), paired(cn.samples, cp.samples, false))
		}
	}
	w.Flush()
}

// measured is one engine's samples of a metric and their median.
type measured struct {
	samples []float64
	median  float64
}

// compare is the native engine's median beside two references' and its
// ratio to each, as five tab-separated cells.
func compare(native, ref1, ref2 measured, unit float64, decimals int, target float64, atLeast bool) string {
	return strings.Join([]string{
		median(native, unit, decimals), median(ref1, unit, decimals), median(ref2, unit, decimals),
		ratio(native.median, ref1.median, target, atLeast), ratio(native.median, ref2.median, target, atLeast),
	}, "\t")
}

// median is the median over unit with the given decimals, or "-" where
// the engine measured nothing (netperf at several flows or under a chosen
// cc, a failed case), which a 0 would misstate.
func median(m measured, unit float64, decimals int) string {
	if len(m.samples) == 0 {
		return "-"
	}
	return strconv.FormatFloat(m.median/unit, 'f', decimals, 64)
}

// paired is the native engine's per-turn ratio to a reference with its
// interval: ok when the target of 1 is met, tie when the interval holds
// 1, MISS when the native engine is worse beyond the noise.
func paired(native, ref []float64, higherIsBetter bool) string {
	r := stats.PairedRatio(native, ref)
	if r.N < 2 {
		return "n/a"
	}
	verdict := "ok"
	switch {
	case higherIsBetter && r.CI95High < 1, !higherIsBetter && r.CI95Low > 1:
		verdict = "MISS"
	case higherIsBetter && r.Ratio < 1, !higherIsBetter && r.Ratio > 1:
		verdict = "tie"
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f] %s", r.Ratio, r.CI95Low, r.CI95High, verdict)
}

// pinningLabel names a case's placement as the -placement flag does: a
// scenario records "none" as no placement at all.
func pinningLabel(placement string) string {
	if placement == "" {
		return "none"
	}
	return placement
}

func ccLabel(cc string) string {
	if cc == "" {
		return "default"
	}
	return cc
}

func label(m string) string {
	if m == "host" {
		return "loopback"
	}
	return m
}

func ratio(a, b, target float64, atLeast bool) string {
	if a <= 0 || b <= 0 {
		return "n/a"
	}
	r := a / b
	ok := (atLeast && r >= target) || (!atLeast && r <= target)
	verdict := "ok"
	if !ok {
		verdict = "MISS"
	}
	return fmt.Sprintf("%.3f %s", r, verdict)
}
