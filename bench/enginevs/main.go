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
// An engine that is not installed or cannot run a case shows n/a.
// Run it as root on a quiet machine: go run ./bench/enginevs
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"cnbench/internal/driver"
	"cnbench/internal/engine"
	"cnbench/internal/model"
	modetable "cnbench/internal/modes"
	"cnbench/internal/runner"
	"cnbench/internal/scenario"
	"cnbench/internal/store"
	"cnbench/internal/topo"
	"cnbench/internal/workload"
)

func main() {
	// This binary is also the native engine the runner starts.
	if len(os.Args) > 1 && os.Args[1] == "engine" {
		if err := engine.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		return
	}
	modes := flag.String("modes", "host,veth,bridge,macvlan", "modes to compare on (host in chc is loopback)")
	samples := flag.Int("samples", 5, "samples per case; ratios use their medians")
	duration := flag.Duration("duration", 5*time.Second, "length of each sample (whole seconds: the tools need them)")
	db := flag.String("db", "", "keep the results in this database (default: a temporary one)")
	place := flag.String("placement", "different_cores,none", "CPU pinnings to measure, as in scenarios; none leaves it to the scheduler")
	flows := flag.Int("flows", 4, "the multi-flow rows' flow count (1 measures one flow only)")
	flag.Parse()
	if err := run(*modes, *samples, *duration, *place, *flows, *db); err != nil {
		fmt.Fprintln(os.Stderr, "enginevs:", err)
		os.Exit(1)
	}
}

func run(modes string, samples int, duration time.Duration, place string, flows int, db string) error {
	if db == "" {
		dir, err := os.MkdirTemp("", "cnb-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		db = filepath.Join(dir, "bench.db")
	}
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
  - {type: tcp_stream, flows: 1, msg_size: 128K}
  - {type: tcp_rr, request_size: 64, response_size: 64}
`, duration.Milliseconds(), samples, modes, place)
	flowCounts := []int{1}
	if flows > 1 {
		doc += fmt.Sprintf("  - {type: tcp_stream, flows: %d, msg_size: 128K}\n", flows)
		flowCounts = append(flowCounts, flows)
	}
	spec, err := scenario.Parse("enginevs", []byte(doc), scenario.Vocabulary{
		Modes: modetable.Names(), Topologies: topo.Kinds, Workloads: workload.Names(), Engines: driver.Names(),
	})
	if err != nil {
		return err
	}
	st, err := store.Open(db)
	if err != nil {
		return err
	}
	defer st.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	r, err := runner.New(st, runner.Options{EngineCommand: []string{self, "engine"}, Progress: os.Stderr})
	if err != nil {
		return err
	}
	defer r.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	id, err := r.Run(ctx, spec)
	if err != nil {
		return err
	}
	res, err := st.LoadRun(id)
	if err != nil {
		return err
	}
	printRatios(res, strings.Split(modes, ","), strings.Split(place, ","), flowCounts)
	return nil
}

// row names the cases one line of the table compares.
type row struct {
	mode, placement string
	flows           int
}

// median of the metric over a case's samples, or 0 if the case has none.
func median(res *model.RunResult, r row, workload, engine, metric string) float64 {
	placement := r.placement
	if placement == "none" {
		placement = "" // how the scenario records it
	}
	for _, c := range res.Cases {
		if c.Mode != r.mode || c.Workload != workload || c.Engine != engine || c.Status != model.StatusOK ||
			c.Params.Placement != placement || (workload == "tcp_stream" && c.Params.Flows != r.flows) {
			continue
		}
		var xs []float64
		for _, s := range c.Samples {
			if v, ok := s.Values[metric]; ok {
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 {
			return 0
		}
		sort.Float64s(xs)
		if n := len(xs); n%2 == 0 {
			return (xs[n/2-1] + xs[n/2]) / 2
		}
		return xs[len(xs)/2]
	}
	return 0
}

func printRatios(res *model.RunResult, modes, placements []string, flowCounts []int) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "mode\tpinning\tflows\tnative Gbit/s\tiperf3\tnetperf\tthroughput ratio (>=1.00) iperf3\tnetperf\t"+
		"native s/GB\tiperf3\tnetperf\tcpu ratio (<=1.00) iperf3\tnetperf\t"+
		"native rtt us\tsockperf\tnetperf\tlatency ratio (<=1.10) sockperf\tnetperf\t\n")
	for _, m := range modes {
		for _, p := range placements {
			for _, f := range flowCounts {
				printRow(w, res, row{m, p, f})
			}
		}
	}
	w.Flush()
	fmt.Printf("medians of %d alternated samples per engine; run %d, %s\n", res.Cases[0].Params.Samples, res.Run.ID, res.Run.Env.CPUModel)
}

func printRow(w *tabwriter.Writer, res *model.RunResult, r row) {
	at := func(workload, engine, metric string) float64 { return median(res, r, workload, engine, metric) }
	tn, ti, tp := at("tcp_stream", "native", model.ThroughputBPS), at("tcp_stream", "iperf3", model.ThroughputBPS), at("tcp_stream", "netperf", model.ThroughputBPS)
	cn, ci, cp := at("tcp_stream", "native", model.CPUSPerGB), at("tcp_stream", "iperf3", model.CPUSPerGB), at("tcp_stream", "netperf", model.CPUSPerGB)
	var ln, ls, lp float64
	if r.flows == 1 {
		ln, ls, lp = at("tcp_rr", "native", model.LatencyMeanUS), at("tcp_rr", "sockperf", model.LatencyMeanUS), at("tcp_rr", "netperf", model.LatencyMeanUS)
	}
	fmt.Fprintf(w, "%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%s\t%s\t%.3f\t%.3f\t%.3f\t%s\t%s\t%.1f\t%.1f\t%.1f\t%s\t%s\t\n",
		label(r.mode), r.placement, r.flows,
		tn/1e9, ti/1e9, tp/1e9, ratio(tn, ti, 1.00, true), ratio(tn, tp, 1.00, true),
		cn, ci, cp, ratio(cn, ci, 1.00, false), ratio(cn, cp, 1.00, false),
		ln, ls, lp, ratio(ln, ls, 1.10, false), ratio(ln, lp, 1.10, false))
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
