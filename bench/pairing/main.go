// Command pairing measures what pairing buys: how many samples a mode's
// overhead against host needs before its 95% interval is within a target
// (±2% by default), when the two take turns sample by sample (paired)
// and when each case runs on its own (unpaired, in sequence). Each round
// runs the paired and the unpaired run once, alternately, each taking
// -max samples per case; the samples needed are read off the stored
// samples: the first n from which the interval of the first n pairs stays
// within the target. That first passage is itself noisy, so beside it the
// bench estimates the samples from all of them: an interval's half-width
// shrinks as 1/√n, so n·(w/target)² samples bring a half-width w at n
// down to the target. It prints each round and the medians, with the wall
// time those samples took.
//
// What pairing cancels is what the two cases' turn shares: the machine's
// state over a few seconds. -drift starts a load of its own (-hogs busy
// processes) and switches it on and off every half period, as a
// neighbour's batch jobs or a CPU's clock would drift over minutes; the
// engines are pinned (-placement) so that where the scheduler puts them
// does not swamp that drift with noise of its own.
// Run it as root: go run ./bench/pairing -drift 20s
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"cnbench/bench/benchkit"
	"cnbench/internal/model"
	"cnbench/internal/runner"
	"cnbench/internal/stats"
	"cnbench/internal/store"
	"cnbench/internal/workload"
)

// settings are the bench's flags.
type settings struct {
	mode, topology, load, placement string
	max, rounds, hogs               int
	duration, drift                 time.Duration
	targetPct                       float64
}

func main() {
	// This binary is also the native engine the runner starts.
	if len(os.Args) > 1 && os.Args[1] == "spin" {
		spin()
	}
	benchkit.ServeEngineIfAsked()
	var s settings
	flag.StringVar(&s.mode, "mode", "bridge", "the mode compared with host")
	flag.StringVar(&s.topology, "topology", "chc", "the topology both run in")
	flag.StringVar(&s.load, "workload", "tcp_stream", "the workload; its primary metric is compared")
	flag.IntVar(&s.max, "max", 30, "samples per case in each run")
	flag.IntVar(&s.rounds, "rounds", 3, "paired and unpaired runs, alternately; medians over them")
	flag.DurationVar(&s.duration, "duration", time.Second, "length of each sample")
	flag.Float64Var(&s.targetPct, "target", 2, "the interval half-width to reach, in % of the ratio")
	flag.StringVar(&s.placement, "placement", "different_cores", "where sender and receiver run, as in scenarios (none: the scheduler decides)")
	flag.DurationVar(&s.drift, "drift", 0, "period of a load the bench switches on and off (0: none, a quiet machine)")
	flag.IntVar(&s.hogs, "hogs", 1, "busy processes the drifting load runs")
	flag.Parse()
	ctx, stop := benchkit.SignalContext()
	err := run(ctx, s)
	stop()
	benchkit.Exit(ctx, "pairing", err)
}

// outcome is what one run showed.
type outcome struct {
	needed    int           // samples per case to reach the target; 0 if never
	estimated int           // samples per case the spread of all of them implies
	ratio     stats.Ratio   // over every sample
	wall      time.Duration // of the whole run
}

func run(ctx context.Context, s settings) error {
	st, done, err := benchkit.TempStore()
	if err != nil {
		return err
	}
	defer done()
	if s.drift > 0 {
		end, err := startDrift(ctx, s.hogs, s.drift)
		if err != nil {
			return err
		}
		defer end()
		fmt.Printf("drift: %d busy process(es) on for %s, off for %s, throughout\n", s.hogs, s.drift/2, s.drift/2)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "round\tpaired: samples to ±%.1f%%\test.\twall\tunpaired: samples\test.\twall\tratio paired\tratio unpaired\t\n", s.targetPct)
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
		fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t\n", i+1, needed(p.needed, s.max), p.estimated, p.wall.Round(time.Second),
			needed(u.needed, s.max), u.estimated, u.wall.Round(time.Second), ratio(p.ratio), ratio(u.ratio))
	}
	pn, un := medianNeeded(paired), medianNeeded(unpaired)
	pe, ue := medianEstimated(paired), medianEstimated(unpaired)
	fmt.Fprintf(w, "median\t%s\t%d\t\t%s\t%d\t\t\t\t\n", needed(pn, s.max), pe, needed(un, s.max), ue)
	if err := w.Flush(); err != nil {
		return err
	}
	what := fmt.Sprintf("%s %s/%s vs host, %s", s.mode, s.topology, s.load, workload.PrimaryMetric(s.load))
	if pn > 0 && un > 0 {
		fmt.Printf("paired needs %.2fx the samples unpaired needs, as observed (%s)\n", float64(pn)/float64(un), what)
	}
	if pe > 0 && ue > 0 {
		fmt.Printf("paired needs %.2fx the samples unpaired needs, estimated from the spread (%s)\n", float64(pe)/float64(ue), what)
	}
	return nil
}

// once runs host and the mode, paired or one after the other, and reads
// what their overhead needed.
func once(ctx context.Context, st *store.Store, s settings, paired bool) (outcome, error) {
	doc := fmt.Sprintf("name: pairing\nduration: %dms\nwarmup: 1s\nsamples: %d\nmodes: [host, %s]\ntopologies: [%s]\nplacement: [%s]\nworkloads:\n  - {type: %s}\n",
		s.duration.Milliseconds(), s.max, s.mode, s.topology, s.placement, s.load)
	began := time.Now()
	res, err := benchkit.Run(ctx, st, "pairing", doc, runner.Options{Progress: os.Stderr, Pairing: paired, Order: runner.OrderSequential})
	if err != nil {
		return outcome{}, err
	}
	wall := time.Since(began)
	host, mode := primaries(res, "host", s.load), primaries(res, s.mode, s.load)
	compare := stats.UnpairedRatio
	if paired {
		compare = stats.PairedRatio
	}
	o := outcome{ratio: compare(mode, host), wall: wall}
	if n, hw := o.ratio.N, halfWidthPct(o.ratio); n >= 2 && hw > 0 {
		o.estimated = max(2, int(math.Ceil(float64(n)*(hw/s.targetPct)*(hw/s.targetPct))))
	}
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

// medianEstimated is the median of the estimated samples.
func medianEstimated(os []outcome) int {
	ns := make([]int, len(os))
	for i, o := range os {
		ns[i] = o.estimated
	}
	sort.Ints(ns)
	return ns[len(ns)/2]
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
