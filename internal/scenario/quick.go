package scenario

import (
	"slices"
	"strings"
	"time"
)

// The quick form's budget: short samples, a token warm-up, two samples so
// a spread can still be seen, and three points of every sweep.
const (
	QuickDuration = 300 * time.Millisecond
	QuickWarmup   = 100 * time.Millisecond
	QuickSamples  = 2
	// QuickSuffix marks the name of a scenario run in its quick form, so
	// that runs, reports and exports say so; case keys leave it out, so a
	// quick run's cases still line up with a full run's in compare.
	QuickSuffix = "-quick"
)

// Quick returns a copy of the spec shrunk to a smoke-sized run of the same
// experiment: every mode, topology (VM ones too), workload entry, placement
// and engine is kept, so every code path of the full run is taken, while
// samples get shorter and fewer and each sweep axis keeps its first, middle
// and last point (the ends show the trend; the middle shows its shape). A
// spec already shorter than the budget keeps its own values. The name gets
// QuickSuffix and the description says it was shrunk, so the stored
// scenario tells the quick form from the full one.
func (s *Spec) Quick() *Spec {
	q := *s
	q.Duration = min(s.Duration, QuickDuration)
	q.Warmup = min(s.Warmup, QuickWarmup)
	q.Samples = min(s.Samples, QuickSamples)
	q.Modes = slices.Clone(s.Modes)
	q.Topologies = slices.Clone(s.Topologies)
	q.Engines = slices.Clone(s.Engines)
	q.Placements = slices.Clone(s.Placements)
	q.Hosts = slices.Clone(s.Hosts)
	q.Workloads = make([]Workload, len(s.Workloads))
	for i, w := range s.Workloads {
		w.Flows = ends(w.Flows)
		w.MsgSizes = ends(w.MsgSizes)
		w.RequestSizes = ends(w.RequestSizes)
		w.ResponseSizes = ends(w.ResponseSizes)
		w.Rates = ends(w.Rates)
		w.Clients = ends(w.Clients)
		w.Servers = ends(w.Servers)
		q.Workloads[i] = w
	}
	if !strings.HasSuffix(q.Name, QuickSuffix) {
		// Names are bounded; cut the base rather than lose the mark.
		q.Name = q.Name[:min(len(q.Name), maxNameLen-len(QuickSuffix))] + QuickSuffix
	}
	note := "Quick form (cnbench run --quick): samples, warm-up and sweeps shrunk; a smoke test, not a measurement."
	if !strings.HasPrefix(q.Description, note) {
		q.Description = strings.TrimSpace(note + " " + q.Description)
	}
	return &q
}

// ends keeps a sweep's first, middle and last value, in their order; a
// sweep of three or fewer is kept whole. Sweeps hold distinct values, so
// the three picks are distinct too.
func ends[T any](axis []T) []T {
	if len(axis) <= 3 {
		return slices.Clone(axis)
	}
	return []T{axis[0], axis[len(axis)/2], axis[len(axis)-1]}
}
