package main

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"cnbench/internal/stats"
)

// side is one case of a finding, numerator or denominator, as its run
// stored it: the metric over the case's samples and the facts that may
// make the finding untestable here.
type side struct {
	values []float64
	// why there are no values: no run of the suite, the case is not in
	// the run, it failed, or it lacks the metric.
	why string
	// run: the suite has a run; env is then its machine.
	run bool
	env machine
	// skipped: the case was skipped, why is its reason.
	skipped bool
	// accel is how the case's VMs ran ("kvm", "tcg"), datapath the Open
	// vSwitch datapath it used ("system", "netdev"); empty when it had
	// none.
	accel, datapath string
}

// outcome is a finding's verdict here, with the figures it rests on.
type outcome struct {
	verdict verdict
	// reason says why the finding is not testable here.
	reason string
	// measured: both sides have values and a ratio; a, b are their
	// medians. ci: lo..hi is the ratio's 95 % confidence interval, and
	// span the verdicts the rule gives within it.
	measured    bool
	a, b, ratio float64
	ci          bool
	lo, hi      float64
	span        []verdict
	numN, denN  int // the samples on each side
}

// judge decides a finding by its rule from its two sides.
func judge(f finding, num, den side) outcome {
	o := outcome{numN: len(num.values), denN: len(den.values)}
	if o.numN > 0 && o.denN > 0 {
		o.a, o.b = stats.Median(num.values), stats.Median(den.values)
		if o.b != 0 {
			o.measured, o.ratio = true, o.a/o.b
			o.lo, o.hi, o.ci = ratioCI(num.values, den.values)
		}
	}
	if why := untestable(f.needs, num, den); why != "" {
		o.verdict, o.reason = notTestable, why
		return o
	}
	o.verdict = f.rule.decide(o.ratio)
	if o.ci {
		o.span = f.rule.span(o.lo, o.hi)
	}
	return o
}

// untestable says why this machine or its runs cannot test a finding,
// or "": a case skipped for what the machine lacks, guests under TCG,
// Open vSwitch without its kernel datapath, fewer NUMA nodes or cores
// than the finding needs, or no figures to compare.
func untestable(n needs, num, den side) string {
	sides := []side{num, den}
	for _, s := range sides {
		switch {
		case s.skipped:
			return "skipped: " + s.why
		case !s.run:
			return "not measured: " + s.why
		}
	}
	for _, s := range sides {
		if why := n.lack(s.env); why != "" {
			return why
		}
	}
	for _, s := range sides {
		switch {
		case s.accel == "tcg":
			return "the guests ran under TCG, qemu's emulation, as the machine has no usable KVM: a VM's figures measure the emulator"
		case s.datapath == "netdev":
			return "Open vSwitch ran its userspace datapath (netdev), as the kernel has no openvswitch module: every packet crosses ovs-vswitchd"
		}
	}
	for _, s := range sides {
		if len(s.values) == 0 {
			return "not measured: " + s.why
		}
	}
	if stats.Median(den.values) == 0 {
		return "not measured: the denominator's median is 0"
	}
	return ""
}

// ratioCI is the 95 % confidence interval of the ratio a / b, centred
// on the ratio of the medians on a log scale: the standard error is the
// logarithms' of both sides, combined as Welch's, with Student's t for
// the smaller side's degrees of freedom (the conservative choice). ok is
// false with fewer than two values on a side or a value at or below 0.
func ratioCI(a, b []float64) (lo, hi float64, ok bool) {
	la, okA := logs(a)
	lb, okB := logs(b)
	if !okA || !okB || len(a) < 2 || len(b) < 2 {
		return 0, 0, false
	}
	sa, sb := stats.Summarize(la), stats.Summarize(lb)
	se := math.Sqrt(sa.Stddev*sa.Stddev/float64(sa.N) + sb.Stddev*sb.Stddev/float64(sb.N))
	df := float64(min(sa.N, sb.N) - 1)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
	r := stats.Median(a) / stats.Median(b)
	return r * math.Exp(-t*se), r * math.Exp(t*se), true
}

func logs(xs []float64) ([]float64, bool) {
	out := make([]float64, len(xs))
	for i, x := range xs {
		if !(x > 0) || math.IsInf(x, 0) {
			return nil, false
		}
		out[i] = math.Log(x)
	}
	return out, true
}
