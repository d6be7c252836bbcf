package report

import (
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/model"
	"cnbench/internal/stats"
)

// summarizeLatency derives the latency metrics of a case from its samples'
// histograms. It returns nil when no sample has a usable histogram, and
// the caller then falls back to whatever latency values the samples hold.
func summarizeLatency(c model.CaseResult, warnings *[]string) map[string]stats.Summary {
	var hists []*hdrhistogram.Histogram
	for _, smp := range c.Samples {
		if len(smp.Latency) == 0 {
			continue
		}
		h, err := hdrhistogram.Decode(smp.Latency)
		if err != nil {
			*warnings = append(*warnings, fmt.Sprintf("case %d sample %d: latency histogram does not decode (%v), left out", c.Index, smp.Index, err))
			continue
		}
		// A sample that completed no transaction has no percentiles; a
		// zero would pass for an impossibly fast one.
		if h.TotalCount() > 0 {
			hists = append(hists, h)
		}
	}
	if len(hists) == 0 {
		return nil
	}
	merged, dropped := mergeHistograms(hists)
	if dropped > 0 {
		*warnings = append(*warnings, fmt.Sprintf("case %d: %d latency values outside the merged histogram's range, left out", c.Index, dropped))
	}

	out := map[string]stats.Summary{}
	perSample := make([]float64, len(hists))
	for _, p := range model.LatencyPercentiles {
		for i, h := range hists {
			perSample[i] = nsToUS(float64(h.ValueAtQuantile(p.Quantile)))
		}
		out[p.Name] = withMean(stats.Summarize(perSample), nsToUS(float64(merged.ValueAtQuantile(p.Quantile))))
	}
	for i, h := range hists {
		perSample[i] = nsToUS(h.Mean())
	}
	out[model.LatencyMeanUS] = withMean(stats.Summarize(perSample), nsToUS(merged.Mean()))
	return out
}

// mergeHistograms merges into a histogram wide and precise enough for all
// inputs, so that samples recorded with different settings lose nothing.
func mergeHistograms(hists []*hdrhistogram.Histogram) (merged *hdrhistogram.Histogram, dropped int64) {
	lowest, highest, digits := hists[0].LowestTrackableValue(), hists[0].HighestTrackableValue(), hists[0].SignificantFigures()
	for _, h := range hists[1:] {
		lowest = min(lowest, h.LowestTrackableValue())
		highest = max(highest, h.HighestTrackableValue())
		digits = max(digits, h.SignificantFigures())
	}
	merged = hdrhistogram.New(lowest, highest, int(digits))
	for _, h := range hists {
		dropped += merged.Merge(h)
	}
	return merged, dropped
}

// withMean puts the merged-histogram value in place of the mean and centres
// the confidence interval on it: the per-sample spread sizes the interval,
// the merged value is the estimate.
func withMean(s stats.Summary, mean float64) stats.Summary {
	half := s.CIHalfWidth()
	s.Mean, s.CI95Low, s.CI95High = mean, mean-half, mean+half
	return s
}

func nsToUS(ns float64) float64 { return ns / 1000 }
