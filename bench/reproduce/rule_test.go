package main

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// thisMachine is a two-core machine with one NUMA node.
var thisMachine = machine{cores: 2, numaNodes: 1}

// measuredSide is a case of a finished run on m with these samples.
func measuredSide(m machine, values ...float64) side {
	return side{run: true, env: m, values: values}
}

// findingOf is the finding of the studies whose claim starts with prefix.
func findingOf(t *testing.T, prefix string) finding {
	t.Helper()
	for _, s := range studies {
		for _, f := range s.findings {
			if strings.HasPrefix(f.claim, prefix) {
				return f
			}
		}
	}
	t.Fatalf("no finding %q", prefix)
	return finding{}
}

// TestPublishedExamples decides three findings of the studies on the
// figures measured here that direction alone had called holding.
func TestPublishedExamples(t *testing.T) {
	cases := []struct {
		claim    string
		num, den float64
		want     verdict
		reason   string
	}{
		{"single flow, CHC: sender and receiver close", 23.75, 22.80, notTestable, "NUMA nodes and needs 2; the run's machine has 1"},
		{"macvlan is within a few percent", 23685, 29552, doesNotHold, ""},
		{"containers add about 10 %", 33.7, 22.1, directionOnly, ""},
	}
	for _, c := range cases {
		f := findingOf(t, c.claim)
		o := judge(f, measuredSide(thisMachine, c.num, c.num), measuredSide(thisMachine, c.den, c.den))
		if o.verdict != c.want || !strings.Contains(o.reason, c.reason) {
			t.Errorf("%s: ratio %.2f gives %q (%s), want %q (%s)", c.claim, o.ratio, o.verdict, o.reason, c.want, c.reason)
		}
		if !o.measured {
			t.Errorf("%s: the ratio is not shown", c.claim)
		}
	}
	// On a machine with two NUMA nodes, the NUMA finding is tested: the
	// published 4.5 against 1.04 is the right direction, far too small.
	two := machine{cores: 32, numaNodes: 2}
	f := findingOf(t, "single flow, CHC: sender and receiver close")
	if o := judge(f, measuredSide(two, 23.75), measuredSide(two, 22.80)); o.verdict != directionOnly {
		t.Errorf("NUMA on two nodes: %q, want direction only", o.verdict)
	}
}

func TestDecide(t *testing.T) {
	cases := []struct {
		rule  rule
		ratio float64
		want  verdict
	}{
		{above(1.10), 1.10, holds},
		{above(1.10), 1.05, holds},
		{above(1.10), 1.21, holds},
		{above(1.10), 1.52, directionOnly},
		{above(1.10), 1.01, directionOnly},
		{above(1.10), 1, doesNotHold},
		{above(1.10), 0.9, doesNotHold},
		{above(4.5), 1.04, directionOnly},
		{above(4.5), 3, holds},
		{below(0.086), 0.048, holds},
		{below(0.086), 0.5, directionOnly},
		{below(0.086), 1.2, doesNotHold},
		// A 98 % fall is not within 2x of a 60 % one, as |ratio - 1|
		// (0.98 against 0.60) would have it.
		{below(0.395), 0.018, directionOnly},
		{below(0.395), 0.3, holds},
		{above(0), 1.01, holds},
		{above(0), 30, holds},
		{above(0), 0.99, doesNotHold},
		{below(0), 0.32, holds},
		{below(0), 1.3, doesNotHold},
		{within(0.05), 0.966, holds},
		{within(0.05), 1.05, holds},
		{within(0.05), 0.80, doesNotHold},
		{within(0.05), 1.06, doesNotHold},
		{within(0.10), 1.70, doesNotHold},
	}
	for _, c := range cases {
		if got := c.rule.decide(c.ratio); got != c.want {
			t.Errorf("%v on %g: %q, want %q", c.rule, c.ratio, got, c.want)
		}
	}
}

// TestBands checks the bands the page quotes as examples.
func TestBands(t *testing.T) {
	cases := []struct{ published, lo, hi float64 }{
		{1.10, 1.05, 1.21},
		{4.5, 2.12, 20.25},
		{0.086, 0.0074, 0.293},
	}
	for _, c := range cases {
		r := above(c.published)
		if c.published < 1 {
			r = below(c.published)
		}
		lo, hi := r.band()
		if math.Abs(lo/c.lo-1) > 0.01 || math.Abs(hi/c.hi-1) > 0.01 {
			t.Errorf("band of %g: %g to %g, want %g to %g", c.published, lo, hi, c.lo, c.hi)
		}
	}
}

func TestUntestable(t *testing.T) {
	f := finding{rule: above(1.2)}
	ok := measuredSide(thisMachine, 2, 2)
	cases := []struct {
		name     string
		f        finding
		num, den side
		reason   string
	}{
		{"skipped for the kernel", f, ok, side{run: true, env: thisMachine, skipped: true, why: "unsupported on this machine: the kernel cannot create ipvlan:l3 links"}, "skipped: unsupported"},
		{"guests under TCG", f, side{run: true, env: thisMachine, values: []float64{1}, accel: "tcg"}, ok, "TCG"},
		{"OVS in userspace", f, ok, side{run: true, env: thisMachine, values: []float64{1}, datapath: "netdev"}, "openvswitch module"},
		{"too few cores", finding{rule: above(10), needs: needs{cores: 32}}, ok, ok, "needs 32 cores"},
		{"one NUMA node", finding{rule: above(4.5), needs: needs{numaNodes: 2}}, ok, ok, "NUMA"},
		{"no run", f, side{why: "no run of hoysala"}, ok, "not measured: no run of hoysala"},
		{"case left out", f, ok, side{run: true, env: thisMachine, why: "case not in run 6"}, "not measured: case not in run 6"},
		{"zero denominator", f, ok, measuredSide(thisMachine, 0), "median is 0"},
	}
	for _, c := range cases {
		o := judge(c.f, c.num, c.den)
		if o.verdict != notTestable || !strings.Contains(o.reason, c.reason) {
			t.Errorf("%s: %q (%s), want not testable (%s)", c.name, o.verdict, o.reason, c.reason)
		}
	}
	// Enough cores, KVM guests and the kernel datapath: tested.
	big := machine{cores: 32, numaNodes: 2}
	o := judge(finding{rule: above(10), needs: needs{cores: 32, numaNodes: 2}},
		side{run: true, env: big, values: []float64{12}, accel: "kvm"}, side{run: true, env: big, values: []float64{1}, datapath: "system"})
	if o.verdict != holds {
		t.Errorf("on a large machine: %q (%s), want holds", o.verdict, o.reason)
	}
}

func TestSpan(t *testing.T) {
	cases := []struct {
		rule   rule
		lo, hi float64
		want   []verdict
	}{
		{above(1.10), 1.08, 1.15, []verdict{holds}},
		{above(1.10), 0.9, 1.6, []verdict{holds, directionOnly, doesNotHold}},
		{above(1.10), 1.3, 2, []verdict{directionOnly}},
		{above(0), 0.5, 2, []verdict{holds, doesNotHold}},
		{within(0.05), 0.97, 1.03, []verdict{holds}},
		{within(0.05), 0.8, 1.2, []verdict{holds, doesNotHold}},
		{within(0.05), 0.7, 0.8, []verdict{doesNotHold}},
	}
	for _, c := range cases {
		if got := c.rule.span(c.lo, c.hi); !slices.Equal(got, c.want) {
			t.Errorf("%v over %g..%g: %v, want %v", c.rule, c.lo, c.hi, got, c.want)
		}
	}
}

func TestRatioCI(t *testing.T) {
	if lo, hi, ok := ratioCI([]float64{2, 2}, []float64{1, 1}); !ok || lo != 2 || hi != 2 {
		t.Errorf("no spread: %g..%g %v, want 2..2", lo, hi, ok)
	}
	// Logs 1 and 3 against 0 and 0: se 1, t(1 df) 12.706.
	a := []float64{math.E, math.Exp(3)}
	lo, hi, ok := ratioCI(a, []float64{1, 1})
	r := (a[0] + a[1]) / 2
	if !ok || math.Abs(math.Log(r/lo)-12.706) > 0.001 || math.Abs(math.Log(hi/r)-12.706) > 0.001 {
		t.Errorf("spread: %g..%g around %g", lo, hi, r)
	}
	for _, c := range [][2][]float64{{{1}, {1, 1}}, {{1, 0}, {1, 1}}, {{1, 1}, {-1, 1}}} {
		if _, _, ok := ratioCI(c[0], c[1]); ok {
			t.Errorf("%v / %v: an interval, want none", c[0], c[1])
		}
	}
	// Three samples a side take t for two degrees of freedom, 4.303.
	lo, hi, _ = ratioCI([]float64{1, math.E, math.Exp(2)}, []float64{1, 1, 1, 1})
	if want := 4.303 * 1 / math.Sqrt(3); math.Abs(math.Log(hi/lo)/2-want) > 0.001 {
		t.Errorf("three samples: half-width %g, want %g", math.Log(hi/lo)/2, want)
	}
}

// TestFindingsAreWellFormed checks the rules held as data: each has a
// kind, a closeness claim a tolerance and no published ratio, a
// direction's published ratio lies on its side of 1, and each finding
// names two cases.
func TestFindingsAreWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range studies {
		for _, f := range s.findings {
			r := f.rule
			switch {
			case seen[f.claim]:
				t.Errorf("%s: twice", f.claim)
			case r.kind == near && (r.tol <= 0 || r.published != 0):
				t.Errorf("%s: closeness with tolerance %g, published %g", f.claim, r.tol, r.published)
			case r.kind == larger && r.published != 0 && r.published <= 1,
				r.kind == smaller && (r.published < 0 || r.published >= 1):
				t.Errorf("%s: published %g on the wrong side of 1", f.claim, r.published)
			case r.kind != larger && r.kind != smaller && r.kind != near:
				t.Errorf("%s: no kind of claim", f.claim)
			case f.num.key == "" || f.den.key == "" || f.num.metric == "" || f.den.metric == "":
				t.Errorf("%s: a case or metric missing", f.claim)
			}
			seen[f.claim] = true
		}
	}
}

func TestRow(t *testing.T) {
	f := findingOf(t, "containers add about 10 %")
	o := judge(f, measuredSide(thisMachine, 30, 37.4), measuredSide(thisMachine, 22, 22.2))
	row := findingRow(f, o)
	for _, want := range []string{"259 / 235 us = 1.10", "above 1; holds within 2x of the published effect: 1.05 to 1.21", "33.7 µs / 22.1 µs (2, 2)", "1.52 (", "| direction only |", "unsettled: the interval allows holds, direction only, does not hold"} {
		if !strings.Contains(row, want) {
			t.Errorf("row lacks %q:\n%s", want, row)
		}
	}
}
