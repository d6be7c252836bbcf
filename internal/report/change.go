package report

import (
	"fmt"

	"cnbench/internal/stats"
)

// NoSignificantDifference is the verdict on a case that its host case
// does not beat, nor it the host case, beyond the noise; otherwise the
// verdict is Better or Worse.
const NoSignificantDifference Verdict = "no significant difference"

// Change is one metric of a case against its host case: the ratio case
// over host, the geometric mean of per-sample ratios, with its 95%
// interval, and the verdict it comes to.
type Change struct {
	stats.Ratio
	// Verdict is Better or Worse when the interval excludes a ratio of 1
	// (a change of 0%), by the metric's direction, and
	// NoSignificantDifference otherwise.
	Verdict Verdict
}

// Pct gives the ratio and its interval as changes in percent of host,
// signed as the metric moved: a ratio of 0.63 is -37.
func (ch Change) Pct() (pct, low, high float64) {
	return (ch.Ratio.Ratio - 1) * 100, (ch.CI95Low - 1) * 100, (ch.CI95High - 1) * 100
}

// OverheadPct gives the ratio and its interval as a cost in percent of
// host, positive when worse, as the overhead chart plots it.
func (ch Change) OverheadPct(higherIsBetter bool) (pct, low, high float64) {
	pct, low, high = ch.Pct()
	if higherIsBetter {
		return -pct, -high, -low
	}
	return pct, low, high
}

// changeAgainst compares metric name of c with the host case base: sample
// by sample when both took turns, otherwise as two independent sets of
// samples. It reports false when no sample of either gives a ratio.
func changeAgainst(c, base *CaseReport, name string, higherIsBetter bool) (Change, bool) {
	xs, ys := c.samples[name], base.samples[name]
	var r stats.Ratio
	if c.Outcome.Paired && base.Outcome.Paired {
		r = stats.PairedRatio(xs, ys)
	} else {
		r = stats.UnpairedRatio(xs, ys)
	}
	if r.N == 0 {
		return Change{}, false
	}
	return Change{Ratio: r, Verdict: ratioVerdict(r, higherIsBetter)}, true
}

// ratioVerdict says whether r shows a case better or worse than its
// baseline, or neither beyond the noise.
func ratioVerdict(r stats.Ratio, higherIsBetter bool) Verdict {
	if !r.Significant() {
		return NoSignificantDifference
	}
	if (r.Ratio > 1) == higherIsBetter {
		return Better
	}
	return Worse
}

// formatChange writes a change with its interval and the quantity it
// names, e.g. "-37.1% [-39.0, -35.2] throughput"; with a single ratio
// there is no interval to show.
func formatChange(ch Change, quantity string) string {
	pct, low, high := ch.Pct()
	if ch.N < 2 {
		return fmt.Sprintf("%+.1f%% %s", pct, quantity)
	}
	return fmt.Sprintf("%+.1f%% [%+.1f, %+.1f] %s", pct, low, high, quantity)
}

// formatVerdict writes the verdict and how the samples were compared,
// e.g. "worse, paired".
func formatVerdict(ch Change) string {
	how := "unpaired"
	if ch.Paired {
		how = "paired"
	}
	return string(ch.Verdict) + ", " + how
}
