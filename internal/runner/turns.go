package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"cnbench/internal/model"
)

// Every case is measured here, alone or with the cases that differ from
// it only in their engine: those measure one path, built once, and take
// their samples in turns: A B, then B A, and so on. Whatever
// drifts during a run (other load, the clock of the CPUs, where the
// scheduler put the threads) then falls on every engine alike, and a
// comparison between engines is one of the same veths, bridges and
// addresses, sample by sample. Cases on agents or a cluster are placed
// per case, so they run one after the other as before.

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
		if onCluster(c) || r.onAgents(c.Topology) {
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
	drv     driver
	samples []model.Sample
	err     error
	done    bool
}

// runTurns measures cases that share a path with their engines taking
// turns, and records each case's outcome. Only store failures are
// returned.
func (r *Runner) runTurns(ctx context.Context, cs []*model.Case, prior [][]model.Sample) error {
	r.prog.startCases(cs)
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
	plan, err := planPath(lead)
	anyCan := false
	for _, t := range turns {
		t.err = err
		if err == nil {
			t.err = engineSupports(t.c.Engine, t.c.Workload)
			anyCan = anyCan || t.err == nil
		}
	}
	if !anyCan {
		return
	}
	pl, err := r.buildPath(ctx, lead, plan, engines)
	if err != nil {
		for _, t := range turns {
			t.err = cmp.Or(t.err, err)
		}
		return
	}
	var live []*turn
	for _, t := range turns {
		if t.err != nil {
			continue
		}
		if t.drv, t.err = drivers[t.c.Engine](ctx, pl.setup(r, t.c.Engine), *t.c); t.err != nil {
			continue
		}
		if t.err = r.warmUp(ctx, t.drv, pl, t.c); t.err != nil {
			continue
		}
		live = append(live, t)
	}
	began := time.Now()
	for round := 0; ; round++ {
		sampled := false
		seq := slices.Clone(live)
		if round%2 == 1 {
			slices.Reverse(seq)
		}
		for _, t := range seq {
			if t.done || t.err != nil {
				continue
			}
			more, err := r.takeSample(ctx, t.drv, pl, t.c, &t.samples)
			var storeErr *storeError
			switch {
			case errors.As(err, &storeErr):
				// The run ends: what is left is not recorded anyway.
				t.err = err
				r.endTurns(turns, pl)
				return
			case err != nil:
				t.err = err
			case !more:
				t.done = true
			default:
				sampled = true
			}
		}
		if !sampled {
			break
		}
		if err := r.decide(live); err != nil {
			r.endTurns(turns, pl)
			return
		}
		if err := r.budgetSpent(live, time.Since(began)); err != nil {
			r.endTurns(turns, pl)
			return
		}
	}
	r.endTurns(turns, pl)
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
func (r *Runner) endTurns(turns []*turn, pl placed) {
	for _, t := range turns {
		if t.drv != nil {
			t.err = errors.Join(t.err, t.drv.stop())
		}
	}
	closeErr := pl.close()
	if closeErr == nil {
		return
	}
	for _, t := range turns {
		if t.drv != nil {
			t.err = errors.Join(t.err, fmt.Errorf("remove the path: %w", closeErr))
		}
	}
}
