package report

import (
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/model"
	"cnbench/internal/stats"
)

// latencySeries derives the per-sample latency metrics of a case from its
// samples' histograms, and merges the histograms. It returns nils when no
// sample has a usable histogram; the caller then falls back to whatever
// latency values the samples hold.
func latencySeries(c model.CaseResult, warnings *[]string) (map[string][]float64, *hdrhistogram.Histogram) {
	hists := sampleHistograms(c, warnings)
	if len(hists) == 0 {
		return nil, nil
	}
	merged, dropped := mergeHistograms(hists)
	if dropped > 0 {
		*warnings = append(*warnings, fmt.Sprintf("case %d: %d latency values outside the merged histogram's range, left out", c.Index, dropped))
	}
	out := map[string][]float64{}
	for _, h := range hists {
		for _, p := range model.LatencyPercentiles {
			out[p.Name] = append(out[p.Name], nsToUS(float64(h.ValueAtQuantile(p.Quantile))))
		}
		out[model.LatencyMeanUS] = append(out[model.LatencyMeanUS], nsToUS(h.Mean()))
	}
	return out, merged
}

func isLatencyMetric(name string) bool {
	if name == model.LatencyMeanUS {
		return true
	}
	for _, p := range model.LatencyPercentiles {
		if p.Name == name {
			return true
		}
	}
	return false
}

// sampleHistograms decodes the latency histograms of a case's samples,
// leaving out those that are broken or empty.
func sampleHistograms(c model.CaseResult, warnings *[]string) []*hdrhistogram.Histogram {
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
	return hists
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
