package main

import (
	"fmt"
	"math"
	"strings"
)

// A verdict is what the rule makes of a finding here.
type verdict string

const (
	holds         verdict = "holds"
	directionOnly verdict = "direction only"
	doesNotHold   verdict = "does not hold"
	notTestable   verdict = "not testable here"
)

// verdicts in the order the summary counts them.
var verdicts = []verdict{holds, directionOnly, doesNotHold, notTestable}

// kind is what a finding claims about the ratio numerator / denominator.
type kind int

const (
	// larger: the ratio is above 1, by about the published ratio when
	// the study gave one.
	larger kind = iota + 1
	// smaller: the ratio is below 1, by about the published ratio when
	// the study gave one.
	smaller
	// near: the ratio is within tol of 1; the claim is that the gap is
	// small, and it has no direction of its own.
	near
)

// factor bounds how far a measured effect may stray from the published
// one and still hold: within factor times or one factor-th of it.
const factor = 2.0

// rule is how a finding is decided: its kind of claim, the study's ratio
// and, for a closeness claim, its tolerance.
type rule struct {
	kind kind
	// published is the study's ratio numerator / denominator; 0 when it
	// stated only a direction ("grows", "well below").
	published float64
	// tol is a closeness claim's largest |ratio - 1|: 0.05 for "within a
	// few percent".
	tol float64
}

// above, below and within build the rules of the three kinds of claim.
func above(published float64) rule { return rule{kind: larger, published: published} }
func below(published float64) rule { return rule{kind: smaller, published: published} }
func within(tol float64) rule      { return rule{kind: near, tol: tol} }

// effect is the size of a ratio's effect, |ln ratio|: about |ratio - 1|
// near 1, and, unlike it, as large for a fall to a tenth as for a rise
// to ten times, so that falls of 60 % and of 98 % are not "within 2x".
func effect(ratio float64) float64 { return math.Abs(math.Log(ratio)) }

// band is the range of ratios that hold for a larger or smaller claim
// with a published ratio: effects within factor of the published one.
func (r rule) band() (lo, hi float64) {
	e := effect(r.published)
	if r.kind == smaller {
		return math.Exp(-e * factor), math.Exp(-e / factor)
	}
	return math.Exp(e / factor), math.Exp(e * factor)
}

// decide is the rule's verdict on a measured ratio.
func (r rule) decide(ratio float64) verdict {
	if r.kind == near {
		// The slack keeps a ratio of exactly 1 + tol, which floating
		// point puts a hair above, within.
		if math.Abs(ratio-1) <= r.tol+1e-12 {
			return holds
		}
		return doesNotHold
	}
	if r.kind == larger && ratio <= 1 || r.kind == smaller && ratio >= 1 || math.IsNaN(ratio) {
		return doesNotHold
	}
	if r.published == 0 {
		return holds
	}
	if lo, hi := r.band(); ratio < lo || ratio > hi {
		return directionOnly
	}
	return holds
}

// edges are the ratios at which the rule's verdict changes.
func (r rule) edges() []float64 {
	switch {
	case r.kind == near:
		return []float64{1 - r.tol, 1, 1 + r.tol}
	case r.published == 0:
		return []float64{1}
	}
	lo, hi := r.band()
	return []float64{1, lo, hi}
}

// span lists the verdicts the rule gives somewhere within a ratio's
// confidence interval lo..hi, in the order of verdicts: one verdict when
// the interval settles it.
func (r rule) span(lo, hi float64) []verdict {
	seen := map[verdict]bool{r.decide(lo): true, r.decide(hi): true}
	for _, e := range r.edges() {
		if lo < e && e < hi {
			seen[r.decide(e)] = true
		}
	}
	var out []verdict
	for _, v := range verdicts {
		if seen[v] {
			out = append(out, v)
		}
	}
	return out
}

// String states the rule with its parameters, for the table.
func (r rule) String() string {
	switch {
	case r.kind == near:
		return fmt.Sprintf("near 1: within 1 ± %g %%", r.tol*100)
	case r.published == 0 && r.kind == larger:
		return "above 1; no published size, direction decides"
	case r.published == 0:
		return "below 1; no published size, direction decides"
	}
	lo, hi := r.band()
	side := "above"
	if r.kind == smaller {
		side = "below"
	}
	return fmt.Sprintf("%s 1; holds within %gx of the published effect: %s to %s", side, factor, ratioText(lo), ratioText(hi))
}

// needs are what a finding asks of the machine beyond what every case
// records for itself (a VM's accelerator, Open vSwitch's datapath, a
// skipped case's reason).
type needs struct {
	// numaNodes: the finding compares placements across NUMA nodes.
	numaNodes int
	// cores: the finding is that more flows or endpoints add throughput,
	// which takes a sender and a receiver core per flow of its larger
	// side.
	cores int
}

// machine is what a run stored about where its cases ran.
type machine struct {
	cores, numaNodes int
}

// lack says what the machine lacks for the finding, or "".
func (n needs) lack(m machine) string {
	switch {
	case n.numaNodes > m.numaNodes:
		return fmt.Sprintf("the finding compares NUMA nodes and needs %d; the run's machine has %d", n.numaNodes, m.numaNodes)
	case n.cores > m.cores:
		return fmt.Sprintf("the finding needs %d cores, a sender and a receiver core per flow; the run's machine has %d", n.cores, m.cores)
	}
	return ""
}

func (n needs) String() string {
	var s []string
	if n.numaNodes > 0 {
		s = append(s, fmt.Sprintf("%d NUMA nodes", n.numaNodes))
	}
	if n.cores > 0 {
		s = append(s, fmt.Sprintf("%d cores", n.cores))
	}
	if len(s) == 0 {
		return ""
	}
	return "needs " + strings.Join(s, " and ")
}
