package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"cnbench/internal/modes"
	"cnbench/internal/placement"
	"cnbench/internal/runner"
	"cnbench/internal/scenario"
	"cnbench/internal/store"
	"cnbench/internal/validate"
)

func newValidateCommand() *cobra.Command {
	var (
		modes    []string
		topology string
		samples  int
		sampling samplingFlags
		place    string
		duration time.Duration
		db       string
		th       = validate.DefaultThresholds
		quiet    bool
	)
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the native engine against iperf3, sockperf and the kernel's counters",
		Long: `Validate runs tcp_stream, tcp_rr and udp_rr on each chosen mode with the
native engine and with every external engine installed, and prints per
mode: the native engine's throughput over iperf3's and netperf's, its
TCP and UDP round trips over sockperf's and netperf's, and each stream
engine's received bytes over the TCP payload the receiver's interfaces
counted. A disagreement beyond a threshold is flagged and makes validate
exit 1. Needs root.

Where a metric has two references, the native engine is held to their
span: it agrees when it is within the threshold of either, or lies
between them ("agree: within netperf", "agree: between it and
netperf"). The tools differ from each other by their own habits, such as
iperf3's select() before every read, by more than the threshold on some
paths and CPUs, and no engine can then be within it of both.

The engines measure one path, built once, and take turns sample by
sample, so drift falls on both alike. The sender and the receiver are
pinned (--placement, default different_cores where there are two CPUs),
since where the scheduler happens to put them moves both throughput and
round trip by more than the thresholds. A sample during which the
hypervisor took more than --max-steal of a core is taken again. The
CPUs are kept from idling meanwhile (--keep-cpus-awake, on by default
here): on a virtual machine, waking a halted CPU takes the hypervisor a
time that varies from one sample to the next by more than the engines
differ, and it would drown the comparison.

Each ratio is the geometric mean of the per-turn ratios, with its 95%
confidence interval. Each path takes at least --samples turns; it stops
once its verdict is settled: the ratio and its whole interval within the
threshold, or all of them beyond it; or else at --max-samples turns or
once its turns have taken --time-budget, whichever comes first. A
throughput turn takes about 2 s and its threshold is tight, so it gets
many turns within the budget; a sockperf round trip idles 2 s more per
sample, and its threshold is wider. A verdict still unsettled at the end
is marked so: its ratio is within one interval of the threshold, and
another run may land on the other side.`,
		Example: `  cnbench validate
  cnbench validate --modes veth,bridge --duration 2s --max-samples 40`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(modes) == 0 {
				modes = supportedModes()
			}
			if place == "" {
				place = defaultValidatePlacement()
			}
			doc := fmt.Sprintf("name: validate\nduration: %dms\nwarmup: 1s\nsamples: %d\nmodes: [%s]\ntopologies: [%s]\nplacement: [%s]\n"+
				"workloads:\n  - {type: tcp_stream, flows: 1, msg_size: 128K}\n  - {type: tcp_rr, request_size: 64, response_size: 64}\n"+
				"  - {type: udp_rr, request_size: 64, response_size: 64}\n"+
				"engines: [native, iperf3, sockperf, netperf]\n", duration.Milliseconds(), samples, strings.Join(modes, ", "), topology, place)
			spec, err := scenario.Parse("validate", []byte(doc), vocabulary())
			if err != nil {
				return usageError(err)
			}
			if os.Geteuid() != 0 {
				return errors.New("validate needs root: it creates network namespaces, links and cgroups")
			}
			if db == "" {
				dir, err := os.MkdirTemp("", "cnb-validate-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				db = filepath.Join(dir, "validate.db")
			}
			st, err := store.Open(db)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := sampling.check(samples); err != nil {
				return err
			}
			opts := runner.Options{Decide: validate.Decide(th)}
			sampling.apply(&opts)
			if !quiet {
				opts.Progress = cmd.ErrOrStderr()
			}
			r, err := runner.New(st, opts)
			if err != nil {
				return err
			}
			id, runErr := r.Run(cmd.Context(), spec)
			if err := errors.Join(runErr, r.Close()); err != nil {
				return err
			}
			res, err := st.LoadRun(id)
			if err != nil {
				return err
			}
			checks := validate.Compare(res, th)
			printChecks(cmd, checks)
			for _, c := range checks {
				if !c.OK() {
					return errors.New("the engines or the counters disagree beyond the thresholds (marked DISAGREE above)")
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&modes, "modes", nil, "modes to validate (default: every mode this machine supports)")
	fl.StringVar(&topology, "topology", "chc", "topology to validate on")
	fl.IntVar(&samples, "samples", 5, "fewest turns per path (samples per engine and workload)")
	sampling.add(fl, samplingFlags{maxSamples: 64, timeBudget: 3 * time.Minute, maxSteal: 2, keepAwake: true},
		"also stop an engine's case once its own 95% confidence interval is within PCT % of its mean (0: only when its verdict is settled)",
		"most samples per engine and workload, when the verdict does not settle sooner")
	fl.StringVar(&place, "placement", "", "where the sender and receiver run (default: different_cores with two CPUs or more, else none)")
	fl.DurationVar(&duration, "duration", time.Second, "length of each sample, in whole seconds (iperf3 and sockperf need them)")
	fl.StringVar(&db, "db", "", "keep the validation run in this database (default: a temporary one)")
	fl.Float64Var(&th.Throughput, "throughput-threshold", th.Throughput, "tolerated relative throughput disagreement")
	fl.Float64Var(&th.Latency, "latency-threshold", th.Latency, "tolerated relative latency disagreement")
	fl.Float64Var(&th.Wire, "wire-threshold", th.Wire, "tolerated relative disagreement with the interface counters")
	fl.BoolVarP(&quiet, "quiet", "q", false, "print no progress")
	return cmd
}

// defaultValidatePlacement pins the sender and the receiver to a core
// each where the machine has two.
func defaultValidatePlacement() string {
	if m, err := placement.ReadMachine(); err == nil && len(m) >= 2 {
		return placement.DifferentCores
	}
	return placement.None
}

// supportedModes lists the modes this machine can build.
func supportedModes() []string {
	var ok []string
	for _, name := range modes.Names() {
		if d, _ := modes.Lookup(name); d.Available() == nil {
			ok = append(ok, name)
		}
	}
	return ok
}

func printChecks(cmd *cobra.Command, checks []validate.Check) {
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "mode\ttopology\tcheck\tmeasured\treference\tratio\t95% interval\tverdict")
	for _, c := range checks {
		switch {
		case c.Missing != "":
			fmt.Fprintf(w, "%s\t%s\t%s\t\t\t\t\tnot compared: %s\n", c.Mode, c.Topology, c.What, c.Missing)
		default:
			verdict := "agree"
			switch {
			case !c.OK():
				verdict = "DISAGREE"
			case !c.Within() && c.Between:
				verdict = "agree: between it and " + c.By
			case !c.Within():
				verdict = "agree: within " + c.By
			}
			if c.High > 0 && !c.Settled() {
				// The interval straddles the threshold: another run may
				// well come out the other way.
				verdict += ", unsettled"
			}
			interval := ""
			if c.High > 0 {
				interval = fmt.Sprintf("[%.3f, %.3f]", c.Low, c.High)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%.3f %s\t%.3f %s\t%.3f\t%s\t%s (within %.0f%%)\n", c.Mode, c.Topology, c.What, c.A, c.Unit, c.B, c.Unit, c.Ratio, interval, verdict, 100*c.Limit)
		}
	}
	w.Flush()
}
