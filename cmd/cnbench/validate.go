package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"cnbench/internal/model"
	"cnbench/internal/modes"
	"cnbench/internal/pinning"
	"cnbench/internal/runner"
	"cnbench/internal/scenario"
	"cnbench/internal/store"
	"cnbench/internal/validate"
)

// validateFlags are validate's settings.
type validateFlags struct {
	modes     []string
	workloads []string
	topology  string
	family    string
	samples   int
	sampling  samplingFlags
	place     string
	duration  time.Duration
	db        string
	th        validate.Thresholds
	quiet     bool
}

func newValidateCommand() *cobra.Command {
	f := validateFlags{th: validate.DefaultThresholds}
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the native engine against iperf3, sockperf and the kernel's counters",
		Long: `Validate runs tcp_stream, tcp_rr and udp_rr (or those --workloads names)
on each chosen mode with the native engine and with every external engine
installed, and prints per mode two kinds of check, each row named by its
kind. Needs root.

Accuracy holds each engine's numbers to the kernel's counters: each
stream engine's received bytes over the TCP payload the receiver's
interfaces counted, and the native engine's udp_rr loss against the
requests the kernel delivered to the server's sockets (the share it
says was answered over the share the kernel delivered). The counters
are the truth: beyond --wire-threshold an engine's number is wrong, and
validate exits 1.

Comparability holds the native engine to iperf3, netperf and sockperf
on the same path. Throughput is one-sided: the native engine slower
than a reference beyond --throughput-threshold is the bottleneck, and
validate exits 4; faster, the reference was the bottleneck, and the row
says so with each engine's sender and receiver CPU ("reference
CPU-bound" when its busier side used 90% of a core or more), which is
not a failure. Round trips are two-sided: longer or shorter beyond
--latency-threshold exits 4. Where a round trip has two references, the
native engine is held to their span: it agrees when it is within the
threshold of either, or lies between them ("agree: within netperf",
"agree: between it and netperf"). A comparison fails only when the
whole 95% interval of its ratio lies beyond the threshold; a ratio
beyond it whose interval reaches back within it is "undecided", named
on stderr, and does not fail: the samples spread, and such a ratio is
as likely a draw of that spread as a difference of the engines. Exit 4
means the native engine's numbers were accurate but not comparable;
exit 1 comes first when both.

The engines measure one path, built once, and take turns sample by
sample, so drift falls on both alike. The sender and the receiver are
pinned (--placement, default different_cores where there are two CPUs),
since where the scheduler happens to put them moves both throughput and
round trip by more than the thresholds. A sample during which the
hypervisor took more than --max-steal of a core is taken again. While round
trips run, the CPUs are kept from idling (--keep-cpus-awake, round-trips
by default here): on a virtual machine, waking a halted CPU takes the
hypervisor a time that varies from one sample to the next by more than
the engines differ, and it would drown the comparison. Streams run with
the CPUs left alone: they keep their cores busy by themselves, and
spinners sharing those cores slowed the engines unequally.

Each ratio is the geometric mean of the per-turn ratios, with its 95%
confidence interval. Each path takes at least --samples turns; it stops
once its verdict is settled: the ratio and its whole interval within the
threshold, or all of them beyond it; or else at --max-samples turns or
once its turns have taken --time-budget, whichever comes first. A
throughput turn takes about 2 s and its threshold is tight, so it gets
many turns within the budget; a sockperf round trip idles 2 s more per
sample, and its threshold is wider. A verdict still unsettled at the end
is marked so ("undecided" where it would fail): its ratio is within one
interval of the threshold, and another run may land on the other side.`,
		Example: `  cnbench validate
  cnbench validate --modes veth,bridge --duration 2s --max-samples 40`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runValidate(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.modes, "modes", nil, "modes to validate (default: every mode this machine supports)")
	fl.StringVar(&f.topology, "topology", "chc", "topology to validate on")
	fl.StringSliceVar(&f.workloads, "workloads", validate.Workloads, "workloads to validate, and so the checks: tcp_stream (throughput, received bytes), tcp_rr, udp_rr (round trips, udp loss)")
	fl.StringVar(&f.family, "family", "ipv4", "address family of the topology: ipv4, ipv6 or dual (traffic over IPv6)")
	fl.IntVar(&f.samples, "samples", 5, "fewest turns per path (samples per engine and workload)")
	f.sampling.add(fl, samplingFlags{maxSamples: 64, timeBudget: 3 * time.Minute, maxSteal: 2, keepAwake: runner.AwakeForRoundTrips},
		"also stop an engine's case once its own 95% confidence interval is within PCT % of its mean (0: only when its verdict is settled)",
		"most samples per engine and workload, when the verdict does not settle sooner")
	fl.StringVar(&f.place, "placement", "", "where the sender and receiver run (default: different_cores with two CPUs or more, else none)")
	fl.DurationVar(&f.duration, "duration", time.Second, "length of each sample, in whole seconds (iperf3 and sockperf need them)")
	fl.StringVar(&f.db, "db", "", "keep the validation run in this database (default: a temporary one)")
	fl.Float64Var(&f.th.Throughput, "throughput-threshold", f.th.Throughput, "tolerated relative throughput disagreement")
	fl.Float64Var(&f.th.Latency, "latency-threshold", f.th.Latency, "tolerated relative latency disagreement")
	fl.Float64Var(&f.th.Wire, "wire-threshold", f.th.Wire, "tolerated relative disagreement with the interface counters")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress")
	return cmd
}

// runValidate runs the validation scenario, prints its checks, and fails
// when one of them disagrees.
func runValidate(cmd *cobra.Command, f validateFlags) error {
	if len(f.modes) == 0 {
		f.modes = supportedModes()
	}
	if f.place == "" {
		f.place = defaultValidatePlacement()
	}
	spec, err := validateSpec(f)
	if err != nil {
		return usageError(err)
	}
	if os.Geteuid() != 0 {
		return errors.New("validate needs root: it creates network namespaces, links and cgroups")
	}
	if f.db == "" {
		dir, err := os.MkdirTemp("", "cnb-validate-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		f.db = filepath.Join(dir, "validate.db")
	}
	st, err := store.Open(f.db)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := f.sampling.check(f.samples); err != nil {
		return err
	}
	res, err := runValidation(cmd, st, spec, f)
	if err != nil {
		return err
	}
	checks := validate.Compare(res, f.th)
	printChecks(cmd, checks)
	warnUndecided(cmd, checks)
	return validateVerdict(checks, failedCases(res))
}

// validateVerdict is validate's error, by the worst of what it found: an
// engine's number off the kernel's counters, or a case that failed (exit
// 1; a failed engine leaves its checks "not compared", and validate has
// then not checked what it was asked to); else the native engine behind
// or apart from a reference while its numbers are accurate (exit 4).
func validateVerdict(checks []validate.Check, failed error) error {
	var accuracy, comparability []string
	for _, c := range checks {
		if c.OK() {
			continue
		}
		row := c.Mode + " " + c.What
		if c.Kind == validate.Accuracy {
			accuracy = append(accuracy, row)
		} else {
			comparability = append(comparability, row)
		}
	}
	switch {
	case len(accuracy) > 0:
		return fmt.Errorf("accuracy: an engine's numbers disagree with the kernel's counters beyond the threshold (%s)", strings.Join(accuracy, "; "))
	case failed != nil:
		return failed
	case len(comparability) > 0:
		return &exitError{code: exitIncomparable, err: fmt.Errorf(
			"comparability: the native engine is behind or apart from a reference beyond the threshold, its numbers agreeing with the kernel's counters (%s)",
			strings.Join(comparability, "; "))}
	}
	return nil
}

// warnUndecided names the comparisons that ended undecided, which do not
// fail validate but which a reader of its exit code alone would miss.
func warnUndecided(cmd *cobra.Command, checks []validate.Check) {
	var rows []string
	for _, c := range checks {
		if c.Undecided() {
			rows = append(rows, fmt.Sprintf("%s %s %.3f [%.3f, %.3f]", c.Mode, c.What, c.Ratio, c.Low, c.High))
		}
	}
	if len(rows) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "undecided, not failed: %d comparison(s) beyond the threshold whose 95%% interval reaches within it (%s); another run may decide them\n",
			len(rows), strings.Join(rows, "; "))
	}
}

// runValidation runs spec into st, letting validate's verdicts end each
// path's turns, and returns what it stored.
func runValidation(cmd *cobra.Command, st *store.Store, spec *scenario.Spec, f validateFlags) (*model.RunResult, error) {
	opts := runner.Options{Decide: validate.Decide(f.th)}
	f.sampling.apply(&opts)
	if !f.quiet {
		opts.Progress = cmd.ErrOrStderr()
	}
	r, err := runner.New(st, opts)
	if err != nil {
		return nil, err
	}
	id, runErr := r.Run(cmd.Context(), spec)
	if err := errors.Join(runErr, r.Close()); err != nil {
		return nil, err
	}
	return st.LoadRun(id)
}

// validateEngines are the engines validate holds to each other: the
// native engine and every reference a comparison of package validate
// names.
var validateEngines = []string{"native", "iperf3", "sockperf", "netperf"}

// validateSpec is the validation scenario: on each mode, one TCP stream
// of 128 KiB writes and TCP and UDP round trips of 64 bytes, every engine
// on every workload, after a warm-up of a second.
func validateSpec(f validateFlags) (*scenario.Spec, error) {
	v := vocabulary()
	topologies := []string{f.topology}
	family, err := model.ParseFamily(f.family)
	if err != nil {
		return nil, &scenario.Error{Path: "--family", Msg: err.Error()}
	}
	if err := errors.Join(
		scenario.CheckNames("--modes", "mode", f.modes, v.Modes),
		scenario.CheckNames("--topology", "topology", topologies, v.Topologies),
		scenario.CheckNames("engines", "engine", validateEngines, v.Engines),
	); err != nil {
		return nil, err
	}
	spec := &scenario.Spec{
		Name:       "validate",
		Modes:      f.modes,
		Topologies: []scenario.Topology{{Name: f.topology, Family: model.FamilyKey(family)}},
		Engines:    validateEngines,
	}
	workloads := map[string]scenario.Workload{
		"tcp_stream": {Type: "tcp_stream", Flows: []int{1}, MsgSizes: []int{128 << 10}},
		"tcp_rr":     {Type: "tcp_rr", Flows: []int{1}, RequestSizes: []int{64}, ResponseSizes: []int{64}},
		"udp_rr":     {Type: "udp_rr", Flows: []int{1}, RequestSizes: []int{64}, ResponseSizes: []int{64}},
	}
	if err := scenario.CheckNames("--workloads", "workload", f.workloads, validate.Workloads); err != nil {
		return nil, err
	}
	for _, name := range validate.Workloads {
		if slices.Contains(f.workloads, name) {
			spec.Workloads = append(spec.Workloads, workloads[name])
		}
	}
	warmup := time.Second
	o := scenario.Overrides{Duration: &f.duration, Warmup: &warmup, Samples: &f.samples, Placements: []string{f.place}}
	if err := spec.Apply(o); err != nil {
		return nil, err
	}
	return spec, nil
}

// defaultValidatePlacement pins the sender and the receiver to a core
// each where the machine has two.
func defaultValidatePlacement() string {
	if m, err := pinning.ReadMachine(); err == nil && len(m) >= 2 {
		return pinning.DifferentCores
	}
	return pinning.None
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

// printChecks prints one row per check: its kind, the values compared,
// the ratio with its interval, and the verdict with its reason.
func printChecks(cmd *cobra.Command, checks []validate.Check) {
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "mode\ttopology\tkind\tcheck\tmeasured\treference\tratio\t95% interval\tverdict")
	for _, c := range checks {
		if c.Missing != "" {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t\t\t\t\t%s\n", c.Mode, c.Topology, c.Kind, c.What, c.Verdict())
			continue
		}
		interval := ""
		if c.High > 0 {
			interval = fmt.Sprintf("[%.3f, %.3f]", c.Low, c.High)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%.3f %s\t%.3f %s\t%.3f\t%s\t%s\n", c.Mode, c.Topology, c.Kind, c.What, c.A, c.Unit, c.B, c.Unit, c.Ratio, interval, c.Verdict())
	}
	w.Flush()
}
