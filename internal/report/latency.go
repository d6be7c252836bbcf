package report

import (
	"fmt"
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/model"
	"cnbench/internal/stats"
)

// latencySeries derives the latency metrics of each of a case's samples
// from its histogram, NaN for a sample without a usable one, and merges
// the histograms. It returns nils when no sample has a usable histogram;
// the caller then falls back to whatever latency values the samples hold.
func latencySeries(c model.CaseResult, warnings *[]string) (map[string][]float64, *hdrhistogram.Histogram) {
	hists := sampleHistograms(c, warnings)
	var usable []*hdrhistogram.Histogram
	for _, h := range hists {
		if h != nil {
			usable = append(usable, h)
		}
	}
	if len(usable) == 0 {
		return nil, nil
	}
	merged, dropped := mergeHistograms(usable)
	if dropped > 0 {
		*warnings = append(*warnings, fmt.Sprintf("case %d: %d latency values outside the merged histogram's range, left out", c.Index, dropped))
	}
	out := map[string][]float64{}
	for i, h := range hists {
		for _, p := range model.LatencyPercentiles {
			setSample(out, p.Name, len(hists), i, histValue(h, func(h *hdrhistogram.Histogram) float64 { return float64(h.ValueAtQuantile(p.Quantile)) }))
		}
		setSample(out, model.LatencyMeanUS, len(hists), i, histValue(h, (*hdrhistogram.Histogram).Mean))
	}
	return out, merged
}

// histValue is a value of h in microseconds, NaN without h.
func histValue(h *hdrhistogram.Histogram, ns func(*hdrhistogram.Histogram) float64) float64 {
	if h == nil {
		return math.NaN()
	}
	return nsToUS(ns(h))
}

// setSample sets sample i of n of a metric's series, creating the series
// with NaN, which stands for a sample without the metric.
func setSample(series map[string][]float64, name string, n, i int, v float64) {
	xs, ok := series[name]
	if !ok {
		xs = make([]float64, n)
		for j := range xs {
			xs[j] = math.NaN()
		}
		series[name] = xs
	}
	xs[i] = v
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
// one per sample, nil for those that are missing, broken or empty.
func sampleHistograms(c model.CaseResult, warnings *[]string) []*hdrhistogram.Histogram {
	hists := make([]*hdrhistogram.Histogram, len(c.Samples))
	for i, smp := range c.Samples {
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
			hists[i] = h
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
