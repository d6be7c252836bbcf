// Command pairing measures what pairing buys: how many samples a mode's
// overhead against host needs before its 95% interval is within a target
// (±2% by default), when the two take turns sample by sample (paired)
// and when each case runs on its own (unpaired, in sequence). Each round
// runs the paired and the unpaired run once, alternately, each taking
// -max samples per case; the samples needed are read off the stored
// samples: the first n from which the interval of the first n pairs stays
// within the target. It prints each round and the medians, with the wall
// time those samples took.
// Run it as root: go run ./bench/pairing
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"text/tabwriter"
	"time"

	"cnbench/internal/driver"
	"cnbench/internal/engine"
	"cnbench/internal/model"
	"cnbench/internal/modes"
	"cnbench/internal/runner"
	"cnbench/internal/scenario"
	"cnbench/internal/stats"
	"cnbench/internal/store"
	"cnbench/internal/topo"
	"cnbench/internal/workload"
)

// settings are the bench's flags.
type settings struct {
	mode, topology, load string
	max, rounds          int
	duration             time.Duration
	targetPct            float64
}

func main() {
	// This binary is also the native engine the runner starts.
	if len(os.Args) > 1 && os.Args[1] == "engine" {
		if err := engine.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		return
	}
	var s settings
	flag.StringVar(&s.mode, "mode", "bridge", "the mode compared with host")
	flag.StringVar(&s.topology, "topology", "chc", "the topology both run in")
	flag.StringVar(&s.load, "workload", "tcp_stream", "the workload; its primary metric is compared")
	flag.IntVar(&s.max, "max", 30, "samples per case in each run")
	flag.IntVar(&s.rounds, "rounds", 3, "paired and unpaired runs, alternately; medians over them")
	flag.DurationVar(&s.duration, "duration", time.Second, "length of each sample")
	flag.Float64Var(&s.targetPct, "target", 2, "the interval half-width to reach, in % of the ratio")
	flag.Parse()
	if err := run(s); err != nil {
		fmt.Fprintln(os.Stderr, "pairing:", err)
		os.Exit(1)
	}
}

// outcome is what one run showed.
type outcome struct {
	needed int           // samples per case to reach the target; 0 if never
	ratio  stats.Ratio   // over every sample
	wall   time.Duration // of the whole run
}

func run(s settings) error {
	dir, err := os.MkdirTemp("", "cnb-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(filepath.Join(dir, "bench.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "round\tpaired: samples to ±%.1f%%\twall\tunpaired: samples\twall\tratio paired\tratio unpaired\t\n", s.targetPct)
	var paired, unpaired []outcome
	for i := range s.rounds {
		p, err := once(ctx, st, s, true)
		if err != nil {
			return err
		}
		u, err := once(ctx, st, s, false)
		if err != nil {
			return err
		}
		paired, unpaired = append(paired, p), append(unpaired, u)
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", i+1, needed(p.needed, s.max), p.wall.Round(time.Second),
			needed(u.needed, s.max), u.wall.Round(time.Second), ratio(p.ratio), ratio(u.ratio))
	}
	pn, un := medianNeeded(paired), medianNeeded(unpaired)
	fmt.Fprintf(w, "median\t%s\t\t%s\t\t\t\t\n", needed(pn, s.max), needed(un, s.max))
	if err := w.Flush(); err != nil {
		return err
	}
	if pn > 0 && un > 0 {
		fmt.Printf("paired needs %.2fx the samples unpaired needs (%s %s/%s vs host, %s)\n", float64(pn)/float64(un), s.mode, s.topology, s.load, workload.PrimaryMetric(s.load))
	}
	return nil
}

// once runs host and the mode, paired or one after the other, and reads
// what their overhead needed.
func once(ctx context.Context, st *store.Store, s settings, paired bool) (outcome, error) {
	doc := fmt.Sprintf("name: pairing\nduration: %dms\nwarmup: 1s\nsamples: %d\nmodes: [host, %s]\ntopologies: [%s]\nworkloads:\n  - {type: %s}\n",
		s.duration.Milliseconds(), s.max, s.mode, s.topology, s.load)
	spec, err := scenario.Parse("pairing", []byte(doc), scenario.Vocabulary{
		Modes: modes.Names(), Topologies: topo.Kinds, Workloads: workload.Names(), Engines: driver.Names(),
	})
	if err != nil {
		return outcome{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return outcome{}, err
	}
	r, err := runner.New(st, runner.Options{EngineCommand: []string{self, "engine"}, Progress: os.Stderr,
		Pairing: paired, Order: runner.OrderSequential})
	if err != nil {
		return outcome{}, err
	}
	defer r.Close()
	began := time.Now()
	id, err := r.Run(ctx, spec)
	if err != nil {
		return outcome{}, err
	}
	wall := time.Since(began)
	res, err := st.LoadRun(id)
	if err != nil {
		return outcome{}, err
	}
	host, mode := primaries(res, "host", s.load), primaries(res, s.mode, s.load)
	compare := stats.UnpairedRatio
	if paired {
		compare = stats.PairedRatio
	}
	o := outcome{ratio: compare(mode, host), wall: wall}
	for n := min(len(host), len(mode)); n >= 2; n-- {
		if halfWidthPct(compare(mode[:n], host[:n])) > s.targetPct {
			break
		}
		o.needed = n
	}
	if o.needed > 0 {
		// The samples it took, of both cases, at the run's pace.
		o.wall = wall * time.Duration(o.needed) / time.Duration(max(1, len(host)))
	}
	return o, nil
}

// primaries are a mode's case's primary metric, sample by sample.
func primaries(res *model.RunResult, mode, load string) []float64 {
	for _, c := range res.Cases {
		if c.Mode == mode && c.Status == model.StatusOK {
			xs := make([]float64, len(c.Samples))
			for i, s := range c.Samples {
				xs[i] = s.Values[workload.PrimaryMetric(load)]
			}
			return xs
		}
	}
	return nil
}

func halfWidthPct(r stats.Ratio) float64 {
	return 100 * (r.CI95High - r.CI95Low) / 2 / r.Ratio
}

func needed(n, max int) string {
	if n == 0 {
		return fmt.Sprintf("> %d", max)
	}
	return fmt.Sprint(n)
}

func ratio(r stats.Ratio) string {
	return fmt.Sprintf("%.3f [%.3f, %.3f]", r.Ratio, r.CI95Low, r.CI95High)
}

// medianNeeded is the median of the samples needed, a run that never got
// there counting as more than any that did.
func medianNeeded(os []outcome) int {
	ns := make([]int, len(os))
	for i, o := range os {
		ns[i] = o.needed
		if ns[i] == 0 {
			ns[i] = 1 << 30
		}
	}
	sort.Ints(ns)
	m := ns[len(ns)/2]
	if m == 1<<30 {
		return 0
	}
	return m
}
