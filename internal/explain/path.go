package explain

import (
	"strings"

	"cnbench/internal/model"
	"cnbench/internal/stats"
)

// PathSummary is a case's time between the stages of its path over its
// traced samples: per direction, the path most samples' messages took,
// and for each gap the median over those samples of their medians.
type PathSummary struct {
	Samples    int                      `json:"samples"`
	Directions []model.DirectionLatency `json:"directions"`
	// Notes say why samples have no trace.
	Notes []string `json:"notes,omitempty"`
}

// CasePath sums a case's traced samples; ok is false if none has a
// direction.
func CasePath(samples []model.Sample) (PathSummary, bool) {
	var sum PathSummary
	seen := map[string]bool{}
	byDir := map[string][]model.DirectionLatency{}
	var order []string
	for _, s := range samples {
		if s.Profile == nil || s.Profile.Path == nil {
			continue
		}
		p := s.Profile.Path
		if p.Note != "" && !seen[p.Note] {
			seen[p.Note] = true
			sum.Notes = append(sum.Notes, p.Note)
		}
		if len(p.Directions) > 0 {
			sum.Samples++
		}
		for _, d := range p.Directions {
			if byDir[d.Direction] == nil {
				order = append(order, d.Direction)
			}
			byDir[d.Direction] = append(byDir[d.Direction], d)
		}
	}
	for _, dir := range order {
		sum.Directions = append(sum.Directions, combine(byDir[dir]))
	}
	return sum, len(sum.Directions) > 0
}

// combine takes the samples' most common path of one direction and the
// median of their medians; the messages of samples whose main path
// differed count as others.
func combine(ds []model.DirectionLatency) model.DirectionLatency {
	bySig := map[string][]model.DirectionLatency{}
	best := ""
	for _, d := range ds {
		sig := strings.Join(d.Stages, "\n")
		bySig[sig] = append(bySig[sig], d)
		if n := len(bySig[sig]); n > len(bySig[best]) || (n == len(bySig[best]) && sig < best) {
			best = sig
		}
	}
	main := bySig[best]
	out := model.DirectionLatency{Direction: main[0].Direction, Stages: main[0].Stages}
	totals := make([]float64, len(main))
	for i, d := range main {
		totals[i] = d.TotalUS
		out.MeanUS += d.MeanUS * float64(d.Messages)
		out.Messages += d.Messages
		out.Others += d.Others
	}
	if out.Messages > 0 {
		out.MeanUS /= float64(out.Messages)
	}
	out.TotalUS = stats.Median(totals)
	spread := span(totals)
	out.TotalRangeUS = &spread
	for g := range main[0].GapsUS {
		gaps := make([]float64, len(main))
		for i, d := range main {
			gaps[i] = d.GapsUS[g]
		}
		out.GapsUS = append(out.GapsUS, stats.Median(gaps))
		out.GapsRangeUS = append(out.GapsRangeUS, span(gaps))
	}
	for _, d := range ds {
		if strings.Join(d.Stages, "\n") != best {
			out.Others += d.Messages + d.Others
		}
	}
	return out
}

// Against is how much longer a case's messages took from first stage
// to last than its baseline's, per direction, in microseconds. A
// baseline whose endpoints share a namespace has one direction,
// "either", which stands for both.
func (p PathSummary) Against(base PathSummary) map[string]float64 {
	out := map[string]float64{}
	for _, d := range p.Directions {
		for _, b := range base.Directions {
			if b.Direction == d.Direction || b.Direction == "either" || d.Direction == "either" {
				out[d.Direction] = d.TotalUS - b.TotalUS
				break
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// span is the lowest and highest of xs, which is not empty.
func span(xs []float64) [2]float64 {
	lo, hi := xs[0], xs[0]
	for _, x := range xs[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return [2]float64{lo, hi}
}
