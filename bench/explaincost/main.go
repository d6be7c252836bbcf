// Command explaincost measures the cost of looking: throughput and round
// trip on one path with and without --explain, in alternate runs of the
// same scenario, and the profiler's own CPU time (perf, and the path
// tracer's BPF programs on round trips) as the profiles counted it. It
// prints each round and the medians of the ratios, explained over plain.
// Run it as root: go run ./bench/explaincost
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"cnbench/bench/benchkit"
	"cnbench/internal/explain"
	"cnbench/internal/model"
	"cnbench/internal/runner"
	"cnbench/internal/stats"
	"cnbench/internal/store"
)

type settings struct {
	mode, topology  string
	samples, rounds int
	duration        time.Duration
}

func main() {
	benchkit.ServeEngineIfAsked()
	var s settings
	flag.StringVar(&s.mode, "mode", "bridge", "the mode measured")
	flag.StringVar(&s.topology, "topology", "chc", "its topology")
	flag.IntVar(&s.samples, "samples", 3, "samples per case in each run")
	flag.IntVar(&s.rounds, "rounds", 3, "plain and explained runs, alternately")
	flag.DurationVar(&s.duration, "duration", 2*time.Second, "length of each sample")
	flag.Parse()
	if err := explain.Available(); err != nil {
		fmt.Fprintln(os.Stderr, "explaincost: cannot profile here:", err)
		os.Exit(1)
	}
	ctx, stop := benchkit.SignalContext()
	err := run(ctx, s)
	stop()
	benchkit.Exit(ctx, "explaincost", err)
}

// figures are one run's medians: throughput, mean round trip, and the profiler's
// share of the machine's busy time over the profiled samples.
type figures struct{ bps, rttUS, profilerPct float64 }

func run(ctx context.Context, s settings) error {
	st, done, err := benchkit.TempStore()
	if err != nil {
		return err
	}
	defer done()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "round\tplain Gbit/s\texplained\tratio\tplain rtt us\texplained\tratio\tprofiler (perf and tracer), %% of busy CPU\t\n")
	var tput, rtt, perf []float64
	for i := range s.rounds {
		plain, err := once(ctx, st, s, false)
		if err != nil {
			return err
		}
		looked, err := once(ctx, st, s, true)
		if err != nil {
			return err
		}
		tput, rtt, perf = append(tput, looked.bps/plain.bps), append(rtt, looked.rttUS/plain.rttUS), append(perf, looked.profilerPct)
		fmt.Fprintf(w, "%d\t%.2f\t%.2f\t%.3f\t%.1f\t%.1f\t%.3f\t%.2f\t\n", i+1, plain.bps/1e9, looked.bps/1e9, tput[i],
			plain.rttUS, looked.rttUS, rtt[i], looked.profilerPct)
	}
	fmt.Fprintf(w, "median\t\t\t%.3f\t\t\t%.3f\t%.2f\t\n", stats.Median(tput), stats.Median(rtt), stats.Median(perf))
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Printf("%s/%s, %d samples of %s per case and run; ratios are explained / plain\n", s.mode, s.topology, s.samples, s.duration)
	return nil
}

func once(ctx context.Context, st *store.Store, s settings, explained bool) (figures, error) {
	doc := fmt.Sprintf("name: explaincost\nduration: %dms\nwarmup: 1s\nsamples: %d\nexplain: %t\nmodes: [%s]\ntopologies: [%s]\n"+
		"workloads:\n  - {type: tcp_stream}\n  - {type: tcp_rr}\n", s.duration.Milliseconds(), s.samples, explained, s.mode, s.topology)
	res, err := benchkit.Run(ctx, st, "explaincost", doc, runner.Options{Progress: os.Stderr, Order: runner.OrderSequential})
	if err != nil {
		return figures{}, err
	}
	var f figures
	var perfS, busyS float64
	for _, c := range res.Cases {
		if c.Status != model.StatusOK {
			return figures{}, fmt.Errorf("case %s: %s %s", c.Key, c.Status, c.Reason)
		}
		var xs []float64
		metric := model.ThroughputBPS
		if c.Workload == "tcp_rr" {
			metric = model.LatencyMeanUS
		}
		for _, smp := range c.Samples {
			xs = append(xs, smp.Values[metric])
			if p := smp.Profile; p != nil {
				perfS += p.StagesS[explain.StageProfiler]
				busyS += p.MachineBusyS
			}
		}
		if c.Workload == "tcp_rr" {
			f.rttUS = stats.Median(xs)
		} else {
			f.bps = stats.Median(xs)
		}
	}
	if busyS > 0 {
		f.profilerPct = 100 * perfS / busyS
	}
	return f, nil
}
