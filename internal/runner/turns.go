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
	"cnbench/internal/measure"
	"cnbench/internal/model"
	"cnbench/internal/site"
)

// Every case is measured here, alone or with the cases that differ from
// it only in their engine: those measure one path, built once, and take
// their samples in turns: A B, then B A, and so on. Whatever
// drifts during a run (other load, the clock of the CPUs, where the
// scheduler put the threads) then falls on every engine alike, and a
// comparison between engines is one of the same veths, bridges and
// addresses, sample by sample. Agents build a path for one case at a
// time (their Placer is not Shared), so their cases run one after the
// other; clusters deploy each path's pods or services side by side.

// pathKey is what identifies the path a case measures: everything but
// its engine.
func pathKey(c *model.Case) string {
	b, _ := json.Marshal(c.Params) // Params holds only plain fields
	return c.Mode + "\x00" + c.Topology + "\x00" + c.Workload + "\x00" + string(b)
}

// pairKey is what cases that differ only in their mode and engine share:
// with Options.Pairing, such cases take turns too, each mode on a path of
// its own, so that the drift of a run falls on the modes alike and a
// mode's overhead against host is a ratio of samples taken side by side.
// What only one mode records (the OVS datapath) is left out.
func pairKey(c *model.Case) string {
	b, _ := json.Marshal(c.Params.Comparable())
	return c.Topology + "\x00" + c.Workload + "\x00" + string(b)
}

// turnKey groups the cases that take turns.
func (r *Runner) turnKey(c *model.Case) string {
	if r.opts.Pairing {
		return pairKey(c)
	}
	return pathKey(c)
}

// inTurns groups the indices in order by the cases that take turns,
// keeping the order of each group's first case; only local cases are
// grouped.
func (r *Runner) inTurns(cases []model.Case, order []int) [][]int {
	var groups [][]int
	at := map[string]int{}
	for _, i := range order {
		c := &cases[i]
		if !r.placerFor(c).Shared() {
			groups = append(groups, []int{i})
			continue
		}
		k := r.turnKey(c)
		if g, ok := at[k]; ok {
			groups[g] = append(groups[g], i)
			continue
		}
		at[k] = len(groups)
		groups = append(groups, []int{i})
	}
	return groups
}

// turn is one engine's case on a path shared with the other engines of
// its mode.
type turn struct {
	c       *model.Case
	path    *site.Path
	drv     driver.Driver
	samples []model.Sample
	err     error
	done    bool
	// prof profiles the case's samples; nil unless it is explained.
	prof measure.Profiler
}

// runTurns measures cases that share a path with their engines taking
// turns, and records each case's outcome. Only store failures are
// returned.
func (r *Runner) runTurns(ctx context.Context, cs []*model.Case, prior [][]model.Sample) error {
	r.prog.StartCases(cs)
	if err := r.markPaired(cs); err != nil {
		return err
	}
	turns := make([]*turn, len(cs))
	for i, c := range cs {
		turns[i] = &turn{c: c, samples: slices.Clone(prior[i])}
	}
	r.measureTurns(ctx, turns)
	for _, t := range turns {
		if t.c.Outcome.BuildMS > 0 {
			if err := r.whileLocked(ctx, fmt.Sprintf("the outcome of case %d", t.c.Index), func() error {
				return r.store.SetCaseOutcome(t.c.ID, t.c.Outcome)
			}); err != nil {
				return err
			}
		}
		if err := r.recordOutcome(ctx, t.c, t.err); err != nil {
			return err
		}
	}
	return nil
}

// sinceMS is the whole milliseconds since start, at least 1 so that a
// phase that ran shows.
func sinceMS(start time.Time) int64 { return max(1, time.Since(start).Milliseconds()) }

// markPaired records, with cases whose modes take turns, that their
// samples pair up with the other modes' sample by sample.
func (r *Runner) markPaired(cs []*model.Case) error {
	if !slices.ContainsFunc(cs, func(c *model.Case) bool { return c.Mode != cs[0].Mode }) {
		return nil
	}
	for _, c := range cs {
		c.Outcome.Paired = true
		if err := r.store.SetCaseOutcome(c.ID, c.Outcome); err != nil {
			return &storeError{err}
		}
	}
	return nil
}

// measureTurns sets each turn's err to what ended it, nil when it has
// all its samples. The turns of each mode share one path.
func (r *Runner) measureTurns(ctx context.Context, turns []*turn) {
	var paths []*site.Path
	for _, group := range byPath(turns) {
		if p := r.preparePath(ctx, group); p != nil {
			paths = append(paths, p)
		}
	}
	live := r.startTurns(ctx, turns)
	r.sampleInRounds(ctx, live)
	r.endTurns(turns, paths)
}

// byPath splits turns into those of one path each, in order.
func byPath(turns []*turn) [][]*turn {
	var groups [][]*turn
	at := map[string]int{}
	for _, t := range turns {
		k := pathKey(t.c)
		if g, ok := at[k]; ok {
			groups[g] = append(groups[g], t)
			continue
		}
		at[k] = len(groups)
		groups = append(groups, []*turn{t})
	}
	return groups
}

// preparePath builds the path of turns that share one, if at least one
// of their engines can run the workload; the others are skipped with
// their own reason, and all with the mode's where the mode cannot be
// built.
func (r *Runner) preparePath(ctx context.Context, turns []*turn) *site.Path {
	cases := make([]*model.Case, len(turns))
	for i, t := range turns {
		cases[i] = t.c
	}
	plan, err := site.PlanFor(cases[0])
	anyCan := false
	for _, t := range turns {
		t.err = err
		if err == nil {
			t.err = driver.Supports(t.c.Engine, t.c.Workload)
			anyCan = anyCan || t.err == nil
		}
	}
	if !anyCan {
		return nil
	}
	began := time.Now()
	path, err := r.buildPath(ctx, cases, plan)
	took := sinceMS(began)
	for _, t := range turns {
		t.c.Outcome.BuildMS = took
	}
	if err != nil {
		for _, t := range turns {
			t.err = cmp.Or(t.err, err)
		}
		return nil
	}
	for _, t := range turns {
		t.path = path
	}
	return path
}

// startTurns builds each engine's driver on the path and warms it up; it
// returns the turns that can sample.
func (r *Runner) startTurns(ctx context.Context, turns []*turn) []*turn {
	var live []*turn
	for _, t := range turns {
		if t.err != nil {
			continue
		}
		began := time.Now()
		t.drv, t.err = driver.New(ctx, t.path, r.opts.EngineCommand, *t.c)
		t.c.Outcome.StartMS = sinceMS(began)
		if t.err != nil {
			continue
		}
		if t.err = r.warmUp(ctx, t.drv, t.path, t.c); t.err != nil {
			continue
		}
		if t.prof, t.err = r.profilerFor(t.c, t.path); t.err != nil {
			continue
		}
		live = append(live, t)
	}
	return live
}

// sampleInRounds has the live turns take a sample each per round, in
// alternating order, until none takes one, their comparison is decided
// or their time budget spent. A store failure ends every turn.
func (r *Runner) sampleInRounds(ctx context.Context, live []*turn) {
	began := time.Now()
	for round := 0; ; round++ {
		seq := slices.Clone(live)
		if round%2 == 1 {
			slices.Reverse(seq)
		}
		sampled, err := r.round(ctx, seq)
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
func (r *Runner) round(ctx context.Context, seq []*turn) (bool, error) {
	sampled := false
	for _, t := range seq {
		if t.done || t.err != nil {
			continue
		}
		more, err := r.takeSample(ctx, t.drv, t.path, t.c, t.prof, &t.samples)
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

// endTurns stops every engine and removes the paths; a failure to remove
// a path is each of its cases'.
func (r *Runner) endTurns(turns []*turn, paths []*site.Path) {
	for _, t := range turns {
		if t.drv != nil {
			began := time.Now()
			t.err = errors.Join(t.err, t.drv.Stop())
			t.c.Outcome.StopMS = sinceMS(began)
		}
	}
	// A daemon that died (a dockerd, an ovs-vswitchd) shows in a case's
	// error only as what failed to talk to it, then or on removing the
	// path; name it.
	for _, p := range paths {
		began := time.Now()
		closeErr := p.Close()
		took := sinceMS(began)
		died := p.Deaths()
		for _, t := range turns {
			if t.path != p {
				continue
			}
			t.c.Outcome.TeardownMS = took
			if closeErr != nil && t.drv != nil {
				t.err = errors.Join(t.err, fmt.Errorf("remove the path: %w", closeErr))
			}
			if t.err != nil {
				t.err = site.WithDeaths(t.err, died)
			}
		}
	}
}
