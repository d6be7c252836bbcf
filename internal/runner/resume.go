package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"cnbench/internal/cleanup"
	"cnbench/internal/driver"
	"cnbench/internal/model"
	"cnbench/internal/modes"
	"cnbench/internal/progress"
	"cnbench/internal/scenario"
	"cnbench/internal/topo"
	"cnbench/internal/workload"
)

// ErrRunComplete reports a resume of a run that has nothing left to do.
var ErrRunComplete = errors.New("run is complete")

// ErrRunAlive reports a resume of a run whose process still executes it.
var ErrRunAlive = errors.New("run is still being executed")

// own records this process as the one executing the run, so that a
// resume can tell a killed run from a live one.
func (r *Runner) own(runID int64) error {
	self, err := cleanup.Self()
	if err != nil {
		return err
	}
	return r.store.SetRunOwner(runID, self.Encode())
}

// Resume continues a run that was interrupted or whose process died: it
// takes over the run, then measures only what the store lacks, each
// pending case from the sample after its last stored one, in the run's
// recorded order (shuffled by its recorded seed, or sequential). Cases already ok, skipped or failed are
// left as they are, so the finished run holds the same cases as one that
// was never interrupted. A run whose process is still alive is refused
// with ErrRunAlive, a finished one with ErrRunComplete.
func (r *Runner) Resume(ctx context.Context, runID int64) error {
	res, err := r.store.LoadRun(runID)
	if err != nil {
		return err
	}
	if res.Run.Status == "done" {
		return fmt.Errorf("resume run %d: %w: every case has its result", runID, ErrRunComplete)
	}
	// The stored document is the expanded scenario; it must still parse,
	// or this build could not run the cases it names.
	spec, err := scenario.Parse(fmt.Sprintf("run %d's scenario", runID), []byte(res.Run.ScenarioDoc), Vocabulary())
	if err != nil {
		return fmt.Errorf("resume run %d: %w", runID, err)
	}
	r.useSpec(spec)
	if err := r.claim(runID); err != nil {
		return err
	}
	started := time.Now()

	cases := make([]model.Case, len(res.Cases))
	prior := make([][]model.Sample, len(res.Cases))
	for i, c := range res.Cases {
		cases[i] = c.Case
		prior[i] = c.Samples
	}
	if len(cases) == 0 {
		// Killed between storing the run and storing its cases: the
		// cases are those of the stored scenario.
		cases = r.prepareCases(spec)
		if err := r.store.AddCases(runID, cases); err != nil {
			return err
		}
		prior = make([][]model.Sample, len(cases))
	}
	if err := checkSampleIndices(res.Cases); err != nil {
		return fmt.Errorf("resume run %d: %w", runID, err)
	}

	var left []model.Case
	var order []int
	for _, i := range shuffle(len(cases), res.Run.Seed, res.Run.Order) {
		c := &cases[i]
		if c.Status != model.StatusPending {
			continue
		}
		// All samples stored, but killed before the case was marked:
		// nothing to measure.
		if stop, stoppedBy := enoughSamples(c.Params, primaries(c, prior[i])); stop {
			if stoppedBy != "" {
				c.Outcome.StoppedBy = stoppedBy
				if err := r.store.SetCaseOutcome(c.ID, c.Outcome); err != nil {
					return err
				}
			}
			if err := r.store.SetCaseStatus(c.ID, model.StatusOK, ""); err != nil {
				return err
			}
			continue
		}
		left = append(left, *c)
		order = append(order, i)
	}
	r.prog = progress.New(r.opts.Progress, left)
	r.prog.Printf("run %d resumed: scenario %q, %d of %d cases left, token %s", runID, spec.Name, len(left), len(cases), r.token)
	return r.execute(ctx, runID, started, cases, order, prior)
}

// claim takes over a run for this process, unless its own process is
// still alive or it is done.
func (r *Runner) claim(runID int64) error {
	self, err := cleanup.Self()
	if err != nil {
		return err
	}
	return r.store.ClaimRun(runID, self.Encode(), func(status, prev string) error {
		if status == "done" {
			return fmt.Errorf("resume run %d: %w: every case has its result", runID, ErrRunComplete)
		}
		if status != "running" || prev == "" {
			return nil
		}
		o, err := cleanup.DecodeOwner(prev)
		if err == nil && o.Alive() {
			return fmt.Errorf("resume run %d: %w by process %d; stop it first, or wait for it to end", runID, ErrRunAlive, o.PID)
		}
		return nil
	})
}

// checkSampleIndices makes sure each case's stored samples are numbered
// 0..k-1, so the next one is k; a gap would mean a sample went missing.
func checkSampleIndices(cases []model.CaseResult) error {
	for _, c := range cases {
		for j, s := range c.Samples {
			if s.Index != j {
				return fmt.Errorf("case %s has sample %d where sample %d belongs", c.Key, s.Index, j)
			}
		}
	}
	return nil
}

// Vocabulary is what scenarios may name: what this build can run, with
// the bounds the run holds cases to.
func Vocabulary() scenario.Vocabulary {
	return scenario.Vocabulary{
		Modes:            append(modes.Names(), modes.Patterns()...),
		Topologies:       append(slices.Clone(topo.Kinds), topo.ManyHostWords...),
		Workloads:        workload.Names(),
		Engines:          driver.Names(),
		BusiestHost:      topo.BusiestHost,
		CheckTopology:    topo.CheckKind,
		EndpointsPerHost: modes.EndpointsPerHost,
		TopologyAliases:  topo.Aliases,
	}
}
