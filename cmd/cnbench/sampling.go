package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"cnbench/internal/runner"
	"cnbench/internal/workload"
)

// samplingFlags decide how samples are taken: how many a case takes,
// which it keeps, and whether the CPUs may idle meanwhile; run and
// validate share them with their own defaults.
type samplingFlags struct {
	targetCI   float64
	maxSamples int
	timeBudget time.Duration
	maxSteal   float64
	keepAwake  runner.Awake
}

func (s *samplingFlags) add(fl *pflag.FlagSet, defaults samplingFlags, targetCIUsage, maxSamplesUsage string) {
	fl.Float64Var(&s.targetCI, "target-ci", defaults.targetCI, targetCIUsage)
	fl.IntVar(&s.maxSamples, "max-samples", defaults.maxSamples, maxSamplesUsage)
	fl.DurationVar(&s.timeBudget, "time-budget", defaults.timeBudget,
		"stop sampling a path short of --max-samples once it has its --samples and has sampled this long, its engines together (0: no limit)")
	fl.Float64Var(&s.maxSteal, "max-steal", defaults.maxSteal,
		"take a sample again when the hypervisor took more than PCT % of a core from this machine during it (0: keep every sample; the steal is recorded either way)")
	s.keepAwake = defaults.keepAwake
	fl.Var((*awakeFlag)(&s.keepAwake), "keep-cpus-awake",
		"keep this machine's CPUs from idling while cases run, with spinners of the lowest priority, as idle=poll would: round trips then lose the CPUs' wake-up time, which on a VM varies widely from sample to sample; WHEN is never, round-trips (for "+strings.Join(roundTrips(), ", ")+") or always")
	fl.Lookup("keep-cpus-awake").NoOptDefVal = runner.AwakeAlways.String()
}

// roundTrips lists the workloads that time round trips.
func roundTrips() []string {
	var names []string
	for _, n := range workload.Names() {
		if workload.Get(n).RoundTrips() {
			names = append(names, n)
		}
	}
	return names
}

// awakeFlag is --keep-cpus-awake's value.
type awakeFlag runner.Awake

func (f *awakeFlag) Set(s string) error {
	a, err := runner.ParseAwake(s)
	if err != nil {
		return err
	}
	*f = awakeFlag(a)
	return nil
}

func (f *awakeFlag) String() string { return runner.Awake(*f).String() }
func (f *awakeFlag) Type() string   { return "WHEN" }

// check checks the values, --max-samples against the fewest samples a
// case takes.
func (s samplingFlags) check(fewest int) error {
	if s.targetCI < 0 || s.targetCI > 100 || s.maxSamples < fewest || s.maxSamples > 1000 {
		return usageError(fmt.Errorf("--target-ci must be within 0..100 and --max-samples within %d..1000", fewest))
	}
	if s.timeBudget < 0 {
		return usageError(fmt.Errorf("--time-budget must be 0 or more, got %s", s.timeBudget))
	}
	if s.maxSteal < 0 {
		return usageError(fmt.Errorf("--max-steal must be 0 or more, got %g", s.maxSteal))
	}
	return nil
}

// apply sets the runner's sampling options.
func (s samplingFlags) apply(o *runner.Options) {
	o.TargetCIPct, o.MaxSamples, o.MaxStealPct = s.targetCI, s.maxSamples, s.maxSteal
	o.TimeBudget = s.timeBudget
	o.KeepCPUsAwake = s.keepAwake
}
