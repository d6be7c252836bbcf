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
// marked unsettled: another run may well come out the other way.
func (c Check) Verdict() string {
	if c.Missing != "" {
		return "not compared: " + c.Missing
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
	case c.Kind == Accuracy && c.OK():
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
		return fmt.Sprintf("FAIL comparability: native %s slower than %s: the native engine is the bottleneck %s", offBy(c.Ratio), c.reference, within)
	case c.Ratio > 1:
		return fmt.Sprintf("FAIL comparability: native %s longer than %s %s", offBy(c.Ratio), c.reference, within)
	default:
		return fmt.Sprintf("FAIL comparability: native %s shorter than %s %s", offBy(c.Ratio), c.reference, within)
	}
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
