package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"cnbench/internal/inputfile"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/modes"
	"cnbench/internal/report"
	"cnbench/internal/runner"
	"cnbench/internal/scenario"
	"cnbench/internal/store"
	"cnbench/internal/topo"
	"cnbench/internal/units"
	"cnbench/internal/workload"
	"cnbench/suites"
)

// defaultDB is where results go unless --db says otherwise.
const defaultDB = "cnbench.db"

// vocabulary is what scenarios may name: what this build can run.
func vocabulary() scenario.Vocabulary { return runner.Vocabulary() }

type runFlags struct {
	duration, warmup time.Duration
	samples          int
	db               string
	modes            []string
	topologies       []string
	families         []string
	workloads        []string
	flows            []string
	msgSizes         []string
	more             workloadParams // the other workload parameters' flags
	placements       []string
	explain          bool
	format           string
	quiet            bool
	order            string
	pairing          string
	seed             int64
	sampling         samplingFlags
	resume           int64
	quick            bool
	allowFailures    bool
	kubeconfig       string
}

func newRunCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [SCENARIO.yaml | SUITE]",
		Short: "Run a scenario and print its results",
		Long: `Run expands a scenario into cases (modes x topologies x workloads x
parameters), measures each, stores every sample in the database as soon as
it is taken, and prints the results table. Without a file, the matrix comes
from --modes, --topologies and --workloads. Needs root.

Exit status: 0 when every case is ok or skipped, 1 when some case failed
(the results are printed and stored all the same; --allow-failures exits
0), 2 for invalid input, 130, 143 or 129 when SIGINT, SIGTERM or SIGHUP
stopped the run (stored as interrupted; --resume goes on).`,
		Example: `  cnbench run suites/quick.yaml
  cnbench run quick --samples 5 --duration 10s
  cnbench run --modes bridge,macvlan --workloads tcp_stream,tcp_rr --topologies chc,chhc --flows 1,4
  cnbench run --modes bridge --topologies chhc --workloads udp_stream --rate 1G
  cnbench run --modes bridge --topologies chc --workloads tcp_stream --pattern fan_in --clients 8
  cnbench run --resume 7`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("resume") {
				return resumeRun(cmd, args, f)
			}
			spec, err := f.scenario(cmd, args)
			if err != nil {
				return err
			}
			if os.Geteuid() != 0 {
				return errors.New("run needs root: it creates network namespaces, links and cgroups")
			}
			return runScenario(cmd, spec, f)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.duration, "duration", 0, "length of each sample (overrides the scenario)")
	fl.DurationVar(&f.warmup, "warmup", 0, "discarded warm-up before each case's samples (overrides the scenario)")
	fl.IntVar(&f.samples, "samples", 0, "samples per case (overrides the scenario)")
	fl.StringVar(&f.db, "db", defaultDB, "SQLite database to store results in")
	fl.StringSliceVar(&f.modes, "modes", nil, "modes, without a scenario file: "+strings.Join(modes.Names(), ","))
	fl.StringSliceVar(&f.topologies, "topologies", nil, "topologies, without a scenario file: "+strings.Join(shownTopologies(), ",")+" (same-node means chc, cross-node chhc)")
	fl.StringSliceVar(&f.families, "family", nil, "address families, crossed with every topology (replaces the scenario's): ipv4, ipv6, dual (both; traffic over IPv6)")
	fl.StringSliceVar(&f.workloads, "workloads", nil, "workloads, without a scenario file: "+strings.Join(workload.Names(), ","))
	fl.StringSliceVar(&f.flows, "flows", nil, "parallel flows per workload, e.g. 1,4")
	fl.StringSliceVar(&f.msgSizes, "msg-size", nil, "message sizes, e.g. 64,64K")
	f.more = addWorkloadFlags(fl)
	// Repeated rather than comma-separated: CPU lists hold commas.
	fl.StringArrayVar(&f.placements, "placement", nil, "CPU placement of the engines, repeatable (replaces the scenario's): none, same_core, different_cores, same_node, different_nodes, or SENDER/RECEIVER CPU lists such as 0/1")
	fl.StringVar(&f.format, "format", "table", "results format printed at the end: table, json, csv, markdown")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress")
	fl.StringVar(&f.order, "order", runner.OrderShuffled, "order of the cases: shuffled (seed recorded) or sequential")
	fl.Int64Var(&f.seed, "seed", 0, "seed of the shuffled order, to repeat one (0 picks one)")
	fl.StringVar(&f.pairing, "pairing", "on", "on: cases that differ only in their mode take turns sample by sample, so drift falls on every mode alike; off: each case runs on its own")
	f.sampling.add(fl, samplingFlags{maxSamples: 30},
		"keep sampling each case until its 95% confidence interval is within PCT % of the mean",
		"most samples per case with --target-ci")
	fl.Int64Var(&f.resume, "resume", 0, "continue run `RUN` (interrupted or killed) from its first missing sample")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "run the k8s:* modes on the Kubernetes cluster this kubeconfig names (its current context; the scenario's kubernetes section says more)")
	fl.BoolVar(&f.allowFailures, "allow-failures", false, "exit 0 even when cases failed (they still show as failed in the results)")
	fl.BoolVar(&f.explain, "explain", false, "record every CPU's call stacks during each sample (perf) and attribute them to the path's stages; see `cnbench explain RUN` (overrides the scenario's explain key)")
	fl.BoolVar(&f.quick, "quick", false, "run the scenario's quick form: 300ms samples, 2 per case, each sweep cut to its first, middle and last point; the run's scenario is named NAME-quick (--duration, --warmup, --samples still win)")
	return cmd
}

// scenario builds the spec from the file or suite named, or from the axis
// flags, and applies the overrides. Every error here is invalid input.
func (f *runFlags) scenario(cmd *cobra.Command, args []string) (*scenario.Spec, error) {
	axes := len(f.modes)+len(f.topologies)+len(f.workloads)+len(f.flows)+len(f.msgSizes)+len(f.more.set()) > 0
	var spec *scenario.Spec
	var err error
	switch {
	case len(args) == 1 && axes:
		return nil, usageError(errors.New("give a scenario file or the --modes/--topologies/--workloads/--flows/--msg-size flags, not both"))
	case len(args) == 1:
		spec, err = loadScenario(args[0])
	case axes:
		spec, err = f.fromAxes()
	default:
		return nil, usageError(errors.New("nothing to run: give a scenario file, a built-in suite (see `cnbench suites`), or --modes, --topologies and --workloads"))
	}
	if err != nil {
		return nil, err
	}
	if err := checkModeInputs(spec.Modes); err != nil {
		return nil, usageError(err)
	}
	if f.quick {
		spec = spec.Quick()
	}
	var o scenario.Overrides
	if cmd.Flags().Changed("duration") {
		o.Duration = &f.duration
	}
	if cmd.Flags().Changed("warmup") {
		o.Warmup = &f.warmup
	}
	if cmd.Flags().Changed("samples") {
		o.Samples = &f.samples
	}
	o.Placements = f.placements
	o.Families = f.families
	if cmd.Flags().Changed("explain") {
		o.Explain = &f.explain
	}
	if err := spec.Apply(o); err != nil {
		return nil, err
	}
	if err := f.useKubeconfig(spec); err != nil {
		return nil, err
	}
	if _, err := report.ParseFormat(f.format); err != nil {
		return nil, usageError(err)
	}
	if f.pairing != "on" && f.pairing != "off" {
		return nil, usageError(fmt.Errorf("--pairing: expected on or off, got %q", f.pairing))
	}
	if f.order != runner.OrderShuffled && f.order != runner.OrderSequential {
		return nil, usageError(fmt.Errorf("--order: expected %s or %s, got %q", runner.OrderShuffled, runner.OrderSequential, f.order))
	}
	if err := f.sampling.check(1); err != nil {
		return nil, err
	}
	return spec, nil
}

// useKubeconfig points the scenario's kubernetes section, or a new one,
// at --kubeconfig's file, which must be readable.
func (f *runFlags) useKubeconfig(spec *scenario.Spec) error {
	if f.kubeconfig == "" {
		return nil
	}
	data, err := inputfile.Read(f.kubeconfig, 16<<20)
	if err != nil {
		return usageError(fmt.Errorf("--kubeconfig: %w", err))
	}
	if _, err := clientcmd.Load(data); err != nil {
		return usageError(fmt.Errorf("--kubeconfig: %s is not a kubeconfig: %w", f.kubeconfig, err))
	}
	if spec.Kubernetes == nil {
		spec.Kubernetes = &scenario.Kubernetes{}
	}
	spec.Kubernetes.Kubeconfig = f.kubeconfig
	return nil
}

// checkModeInputs reads the files modes name (a cni: mode's
// configuration) before anything is built: one that cannot be used is
// bad input, where a mode this machine lacks is only skipped later.
func checkModeInputs(names []string) error {
	var errs []error
	for i, name := range names {
		d, ok := modes.Lookup(name)
		if !ok || d.Available == nil {
			continue
		}
		if err := d.Available(); errors.Is(err, mode.ErrBadInput) {
			errs = append(errs, fmt.Errorf("modes[%d] %s: %w", i, name, err))
		}
	}
	return errors.Join(errs...)
}

// loadScenario reads a scenario file, or a built-in suite when no such
// file exists.
func loadScenario(arg string) (*scenario.Spec, error) {
	if _, err := os.Stat(arg); err == nil || strings.ContainsAny(arg, "/.") {
		return scenario.Load(arg, vocabulary())
	}
	file, data, ok := suites.Lookup(arg)
	if !ok {
		return nil, usageError(fmt.Errorf("%q is neither a scenario file nor a built-in suite (built-in: %s)", arg, strings.Join(suites.Names(), ", ")))
	}
	return scenario.Parse(file, data, vocabulary())
}

func (f *runFlags) fromAxes() (*scenario.Spec, error) {
	a := scenario.Axes{Modes: f.modes, Topologies: f.topologies, Workloads: f.workloads, More: f.more.set()}
	for _, s := range f.flows {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, usageError(fmt.Errorf("--flows: expected integers like 1,4, got %q", s))
		}
		a.Flows = append(a.Flows, n)
	}
	for _, s := range f.msgSizes {
		n, err := units.ParseSize(strings.TrimSpace(s))
		if err != nil {
			return nil, usageError(fmt.Errorf("--msg-size: %w", err))
		}
		a.MsgSizes = append(a.MsgSizes, n)
	}
	return scenario.FromAxes(a, vocabulary())
}

func runScenario(cmd *cobra.Command, spec *scenario.Spec, f runFlags) error {
	st, err := store.Open(f.db)
	if err != nil {
		return err
	}
	defer st.Close()
	opts := runner.Options{Order: f.order, Seed: f.seed, Pairing: f.pairing != "off"}
	f.sampling.apply(&opts)
	if !f.quiet {
		opts.Progress = cmd.ErrOrStderr()
	}
	r, err := runner.New(st, opts)
	if err != nil {
		return err
	}
	runID, runErr := r.Run(cmd.Context(), spec)
	if err := r.Close(); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if runID == 0 {
		return runErr
	}
	return endRun(cmd, st, runID, runErr, f, "")
}

// endRun prints a run's stored results and says how the command ends:
// stopped by a signal, failed by the run's own error, failed because some
// case failed (unless --allow-failures), or well. again tells how to go
// on after an interruption.
func endRun(cmd *cobra.Command, st *store.Store, runID int64, runErr error, f runFlags, again string) error {
	res, err := st.LoadRun(runID)
	if err == nil {
		err = report.Write(cmd.OutOrStdout(), report.Build(res), f.format)
	}
	switch {
	case err != nil:
		return errors.Join(runErr, err)
	case errors.Is(runErr, context.Canceled):
		return interrupted(cmd.Context(), fmt.Errorf("%s: run %d holds the samples measured so far%s", stopReason(cmd.Context()), runID, again))
	case runErr != nil:
		return runErr
	case f.allowFailures:
		return nil
	}
	return failedCases(res)
}

// failedCases is an error naming the cases of res that failed, nil when
// none did.
func failedCases(res *model.RunResult) error {
	var failed []string
	for _, c := range res.Cases {
		if c.Status == model.StatusFailed {
			failed = append(failed, fmt.Sprintf("#%d %s", c.Index, c.Key))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return &exitError{code: exitFailure, err: fmt.Errorf("run %d: %d of %d cases failed (%s); the results above give the reasons",
		res.Run.ID, len(failed), len(res.Cases), strings.Join(failed, ", "))}
}

func shownTopologies() []string {
	shown, _ := topo.Shown()
	return shown
}
