package validate

import (
	"fmt"
	"math"
	"strings"
)

// Verdict says in words whether the check passed and why: for a failure,
// its kind and what it means; for a native engine faster than its
// reference, every engine's CPU, which says whether the reference was
// CPU-bound. A verdict whose interval still reaches across the limit is
// marked unsettled: another run may well come out the other way. One
// that would fail is undecided, not failed.
func (c Check) Verdict() string {
	if c.Missing != "" {
		return "not compared: " + c.Missing
	}
	if c.Undecided() {
		return fmt.Sprintf("undecided: %s, its 95%% interval reaching within %.0f%%", c.apart(), 100*c.Limit)
	}
	v := c.verdict()
	if c.High > 0 && !c.Settled() {
		v += ", unsettled"
	}
	return v
}

func (c Check) verdict() string {
	within := fmt.Sprintf("(within %.0f%%)", 100*c.Limit)
	switch {
	case c.Kind == Accuracy && c.agrees():
		return "ok " + within
	case c.Kind == Accuracy:
		return fmt.Sprintf("FAIL accuracy: off the kernel's counters by %s %s", offBy(c.Ratio), within)
	case c.Within():
		return "agree " + within
	case c.Faster():
		return c.fasterVerdict()
	case c.By != "" && c.Between:
		return "agree: between it and " + c.By
	case c.By != "":
		return "agree: within " + c.By
	case c.OneSided:
		return "FAIL comparability: " + c.apart() + ": the native engine is the bottleneck " + within
	default:
		return "FAIL comparability: " + c.apart() + " " + within
	}
}

// apart says how the native engine differs from the reference.
func (c Check) apart() string {
	how := "shorter"
	switch {
	case c.OneSided:
		how = "slower"
	case c.Ratio > 1:
		how = "longer"
	}
	return fmt.Sprintf("native %s %s than %s", offBy(c.Ratio), how, c.reference)
}

// fasterVerdict is the verdict on a native engine faster than the
// reference beyond the limit, with both engines' CPU.
func (c Check) fasterVerdict() string {
	cpu := fmt.Sprintf("%s sender %.0f%%, receiver %.0f%%; native %.0f%%, %.0f%% of a core",
		c.reference, c.Reference.Sender, c.Reference.Receiver, c.Native.Sender, c.Native.Receiver)
	var b strings.Builder
	b.WriteString("native faster: ")
	switch {
	case c.Reference.busiest() == 0:
		b.WriteString("reference CPU not measured")
	case c.Reference.busiest() >= CPUBound:
		b.WriteString("reference CPU-bound (" + cpu + ")")
	default:
		b.WriteString("reference below a core (" + cpu + ")")
	}
	return b.String()
}

// offBy is how far a ratio is from 1, in % of 1 or, from twice on, as a
// multiple.
func offBy(r float64) string {
	if r >= 2 {
		return fmt.Sprintf("%.1fx", r)
	}
	return fmt.Sprintf("%.1f%%", 100*math.Abs(r-1))
}
