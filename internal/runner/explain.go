package runner

import (
	"context"

	"cnbench/internal/explain"
	"cnbench/internal/measure"
	"cnbench/internal/model"
	"cnbench/internal/site"
)

// profilerFor is the profiler of an explained case's samples, or nil. A
// case that cannot be explained here still runs: its outcome says why it
// has no profile. Only a store failure is returned.
func (r *Runner) profilerFor(c *model.Case, p *site.Path) (measure.Profiler, error) {
	if !c.Params.Explain {
		return nil, nil
	}
	note := ""
	if err := explain.Available(); err != nil {
		note = err.Error()
	} else if !p.OnThisMachine() {
		note = "its endpoints run in VM guests or on other machines, whose kernels this machine's perf does not see"
	}
	if note == "" {
		return stackProfiler{explain.Profiler{Table: explain.Default}}, nil
	}
	c.Outcome.ExplainNote = note
	r.prog.Printf("case %d is not explained: %s", c.Index, note)
	if err := r.store.SetCaseOutcome(c.ID, c.Outcome); err != nil {
		return nil, &storeError{err}
	}
	return nil, nil
}

// stackProfiler gives measure explain's recordings.
type stackProfiler struct{ explain.Profiler }

func (s stackProfiler) Start(ctx context.Context) (measure.Profiling, error) {
	return s.Profiler.Start(ctx)
}
