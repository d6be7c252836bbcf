package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"cnbench/internal/driver"
	"cnbench/internal/model"
	"cnbench/internal/site"
)

// Every case is measured here, alone or with the cases that differ from
// it only in their engine: those measure one path, built once, and take
// their samples in turns: A B, then B A, and so on. Whatever
// drifts during a run (other load, the clock of the CPUs, where the
// scheduler put the threads) then falls on every engine alike, and a
// comparison between engines is one of the same veths, bridges and
// addresses, sample by sample. Agents and clusters build a path for one
// case (their Placer is not Shared), so their cases run one after the
// other.

// pathKey is what identifies the path a case measures: everything but
// its engine.
func pathKey(c *model.Case) string {
	b, _ := json.Marshal(c.Params) // Params holds only plain fields
	return c.Mode + "\x00" + c.Topology + "\x00" + c.Workload + "\x00" + string(b)
}

// inTurns groups the indices in order by path, keeping the order of each
// group's first case; only local cases are grouped.
func (r *Runner) inTurns(cases []model.Case, order []int) [][]int {
	var groups [][]int
	at := map[string]int{}
	for _, i := range order {
		c := &cases[i]
		if !r.placerFor(c).Shared() {
			groups = append(groups, []int{i})
			continue
		}
		k := pathKey(c)
		if g, ok := at[k]; ok {
			groups[g] = append(groups[g], i)
			continue
		}
		at[k] = len(groups)
		groups = append(groups, []int{i})
	}
	return groups
}

// turn is one engine's case on a shared path.
type turn struct {
	c       *model.Case
	drv     driver.Driver
	samples []model.Sample
	err     error
	done    bool
}

// runTurns measures cases that share a path with their engines taking
// turns, and records each case's outcome. Only store failures are
// returned.
func (r *Runner) runTurns(ctx context.Context, cs []*model.Case, prior [][]model.Sample) error {
	r.prog.StartCases(cs)
	turns := make([]*turn, len(cs))
	for i, c := range cs {
		turns[i] = &turn{c: c, samples: slices.Clone(prior[i])}
	}
	r.measureTurns(ctx, turns)
	for _, t := range turns {
		if err := r.recordOutcome(ctx, t.c, t.err); err != nil {
			return err
		}
	}
	return nil
}

// measureTurns sets each turn's err to what ended it, nil when it has
// all its samples.
func (r *Runner) measureTurns(ctx context.Context, turns []*turn) {
	lead := turns[0].c
	engines := make([]string, len(turns))
	for i, t := range turns {
		engines[i] = t.c.Engine
	}
	// The mode's reason comes first; then the path is built if at least
	// one engine can run the workload, the others being skipped with
	// their own reason.
	plan, err := site.PlanFor(lead)
	anyCan := false
	for _, t := range turns {
		t.err = err
		if err == nil {
			t.err = driver.Supports(t.c.Engine, t.c.Workload)
			anyCan = anyCan || t.err == nil
		}
	}
	if !anyCan {
		return
	}
	path, err := r.buildPath(ctx, lead, plan, engines)
	if err != nil {
		for _, t := range turns {
			t.err = cmp.Or(t.err, err)
		}
		return
	}
	live := r.startTurns(ctx, turns, path)
	r.sampleInRounds(ctx, live, path)
	r.endTurns(turns, path)
}

// startTurns builds each engine's driver on the path and warms it up; it
// returns the turns that can sample.
func (r *Runner) startTurns(ctx context.Context, turns []*turn, path *site.Path) []*turn {
	var live []*turn
	for _, t := range turns {
		if t.err != nil {
			continue
		}
		if t.drv, t.err = driver.New(ctx, path, r.opts.EngineCommand, *t.c); t.err != nil {
			continue
		}
		if t.err = r.warmUp(ctx, t.drv, path, t.c); t.err != nil {
			continue
		}
		live = append(live, t)
	}
	return live
}

// sampleInRounds has the live turns take a sample each per round, in
// alternating order, until none takes one, their comparison is decided
// or their time budget spent. A store failure ends every turn.
func (r *Runner) sampleInRounds(ctx context.Context, live []*turn, path *site.Path) {
	began := time.Now()
	for round := 0; ; round++ {
		seq := slices.Clone(live)
		if round%2 == 1 {
			slices.Reverse(seq)
		}
		sampled, err := r.round(ctx, seq, path)
		if err != nil || !sampled {
			return
		}
		if r.decide(live) != nil || r.budgetSpent(live, time.Since(began)) != nil {
			return
		}
	}
}

// round has each turn that is not done take its next sample; it reports
// whether any did, and returns a store failure.
func (r *Runner) round(ctx context.Context, seq []*turn, path *site.Path) (bool, error) {
	sampled := false
	for _, t := range seq {
		if t.done || t.err != nil {
			continue
		}
		more, err := r.takeSample(ctx, t.drv, path, t.c, &t.samples)
		var storeErr *storeError
		switch {
		case errors.As(err, &storeErr):
			// The run ends: what is left is not recorded anyway.
			t.err = err
			return false, err
		case err != nil:
			t.err = err
		case !more:
			t.done = true
		default:
			sampled = true
		}
	}
	return sampled, nil
}

// decide ends the live turns when Options.Decide finds their comparison
// settled. It asks only between rounds in which every live engine has
// its samples and as many as the others, so that the samples it sees
// pair up turn by turn. Only a store failure is returned, and set on
// the turns.
func (r *Runner) decide(live []*turn) error {
	if r.opts.Decide == nil || len(live) < 2 {
		return nil
	}
	cs, samples, inStep := pairedTurns(live)
	if !inStep || !r.opts.Decide(cs, samples) {
		return nil
	}
	return r.stopTurns(live, "decided")
}

// budgetSpent ends the live turns once they have sampled for their time
// budget (Params.TimeBudgetMS), between rounds in step as decide does, so
// that the engines keep as many samples each. Only a store failure is
// returned, and set on the turns.
func (r *Runner) budgetSpent(live []*turn, spent time.Duration) error {
	if len(live) == 0 {
		return nil
	}
	budget := time.Duration(live[0].c.Params.TimeBudgetMS) * time.Millisecond
	if budget <= 0 || spent < budget {
		return nil
	}
	if _, _, inStep := pairedTurns(live); !inStep {
		return nil
	}
	return r.stopTurns(live, "time_budget")
}

// pairedTurns returns the live turns' cases and samples when each has
// at least its samples and as many as the others.
func pairedTurns(live []*turn) (cs []*model.Case, samples [][]model.Sample, inStep bool) {
	for _, t := range live {
		if t.err != nil || t.done || len(t.samples) < t.c.Params.Samples || len(t.samples) != len(live[0].samples) {
			return nil, nil, false
		}
		cs = append(cs, t.c)
		samples = append(samples, t.samples)
	}
	return cs, samples, true
}

// stopTurns marks the live turns done, stopped by why, and stores that.
func (r *Runner) stopTurns(live []*turn, why string) error {
	for _, t := range live {
		t.done = true
		t.c.Outcome.StoppedBy = why
		if err := r.store.SetCaseOutcome(t.c.ID, t.c.Outcome); err != nil {
			err = &storeError{err}
			for _, u := range live {
				u.err = err
			}
			return err
		}
	}
	return nil
}

// endTurns stops every engine and removes the path; a failure to do so
// is each affected case's.
func (r *Runner) endTurns(turns []*turn, path *site.Path) {
	for _, t := range turns {
		if t.drv != nil {
			t.err = errors.Join(t.err, t.drv.Stop())
		}
	}
	closeErr := path.Close()
	if closeErr == nil {
		return
	}
	for _, t := range turns {
		if t.drv != nil {
			t.err = errors.Join(t.err, fmt.Errorf("remove the path: %w", closeErr))
		}
	}
}
