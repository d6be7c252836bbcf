// Package runner runs a scenario's cases: in which order, the cases of one
// path taking turns sample by sample, when a case has sampled enough
// (its samples, a target confidence interval, a decided comparison, a
// time budget, retakes of disturbed samples), resuming a run that was
// cut short, and storing every sample the moment it is measured. Where
// endpoints live is package site's, how engines run is package driver's,
// how an exchange becomes a sample is package measure's, and what a
// person sees is package progress's.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"cnbench/internal/agent"
	"cnbench/internal/cleanup"
	"cnbench/internal/cluster"
	"cnbench/internal/cpu"
	"cnbench/internal/driver"
	"cnbench/internal/measure"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/progress"
	"cnbench/internal/scenario"
	"cnbench/internal/selfexe"
	"cnbench/internal/site"
	"cnbench/internal/stats"
	"cnbench/internal/store"
	"cnbench/internal/sysinfo"
	"cnbench/internal/topo"
	"cnbench/internal/workload"
)

// Options tune a Runner.
type Options struct {
	// EngineCommand starts an engine; default: this executable with the
	// argument "engine".
	EngineCommand []string
	// EngineEnv is the engines' environment; default: the runner's.
	EngineEnv []string
	// Progress receives one line per step; nil for silence.
	Progress io.Writer
	// Order is "shuffled" (the default) or "sequential". Shuffling keeps
	// drift over a long sweep from passing for a difference between
	// cases; Seed makes a shuffle repeatable (0 picks one, which the run
	// records).
	Order string
	Seed  int64
	// TargetCIPct, when positive, keeps sampling a case past its samples
	// until the primary metric's 95% confidence interval is within this
	// percentage of the mean, or MaxSamples are taken.
	TargetCIPct float64
	MaxSamples  int
	// TimeBudget, when positive, ends a path's sampling past its samples
	// once it has sampled this long, short of MaxSamples: turns that
	// cost little (a throughput sample) may then take many more than
	// costly ones (a sockperf round trip, which idles 2 s per sample).
	TimeBudget time.Duration
	// MaxStealPct, when positive, takes again a sample during which the
	// hypervisor took more than this much CPU (in % of one core) from
	// the machine: such a sample measures a neighbour's load as much as
	// the network. Each case retakes at most as many samples as it may
	// take, and keeps the last one if all were disturbed.
	MaxStealPct float64
	// Decide, when set, is asked after each round of a path's turns, once
	// each engine there has its samples, whether the comparison between
	// them is settled; if it is, they stop (stopped_by "decided"). Its
	// cases then sample up to MaxSamples even without TargetCIPct. The
	// slices are the cases of the path and their samples, in step.
	Decide func(cases []*model.Case, samples [][]model.Sample) bool
	// Pairing has cases that differ only in their mode (host among them)
	// take turns sample by sample, each mode on its path, as the engines
	// of one path always do; a mode's overhead against host is then a
	// ratio of samples taken side by side.
	Pairing bool
	// KeepCPUsAwake says which cases keep every CPU of this machine
	// from idling while they run (package awake), with AwakeCommand;
	// default: this executable with the argument "awake".
	KeepCPUsAwake Awake
	AwakeCommand  []string
}

// Orders of cases.
const (
	OrderShuffled   = model.OrderShuffled
	OrderSequential = model.OrderSequential
)

// Runner runs scenarios into a store.
type Runner struct {
	store *store.Store
	opts  Options
	token netns.Token
	hier  cpu.Hierarchy
	prog  *progress.Progress
	// local places cases on this machine's emulated hosts, agents on the
	// scenario's hosts on real machines (nil if none), and clusters on
	// the clusters cluster modes (swarm:*) deploy on.
	local    *site.Emulated
	agents   *site.Agents
	clusters *site.Clusters
}

// New prepares a runner: it claims a fresh run token, so that everything it
// creates can be told from another run's, and finds the cgroup hierarchy.
func New(st *store.Store, opts Options) (*Runner, error) {
	if len(opts.EngineCommand) == 0 {
		opts.EngineCommand = selfexe.Command("engine")
	}
	if len(opts.AwakeCommand) == 0 {
		opts.AwakeCommand = []string{opts.EngineCommand[0], "awake"}
	}
	if opts.EngineEnv == nil {
		opts.EngineEnv = os.Environ()
	}
	hier, err := cpu.FindHierarchy()
	if err != nil {
		return nil, err
	}
	r := &Runner{store: st, opts: opts, token: netns.NewToken(), hier: hier}
	r.local = &site.Emulated{Token: r.token, Hier: hier, Env: opts.EngineEnv}
	if err := cleanup.Claim(r.token); err != nil {
		return nil, err
	}
	return r, nil
}

// Close releases the run token.
func (r *Runner) Close() error {
	r.agents.Close()
	r.clusters.Close()
	return errors.Join(r.local.Close(), topo.RemoveImages(r.token), cleanup.Release(r.token))
}

// Token is the run token in the names of everything this runner creates.
func (r *Runner) Token() netns.Token { return r.token }

// Run stores a new run of the scenario and executes all its cases. A
// cancelled context stops it between steps; the run is then stored as
// interrupted, with every sample measured so far.
func (r *Runner) Run(ctx context.Context, spec *scenario.Spec) (int64, error) {
	doc, err := spec.YAML()
	if err != nil {
		return 0, err
	}
	seed := r.opts.Seed
	if seed == 0 {
		seed = rand.Int64()
	}
	run := &model.Run{
		Seed:        seed,
		Order:       r.caseOrder(),
		Scenario:    spec.Name,
		ScenarioDoc: string(doc),
		Started:     time.Now(),
		Status:      "running",
		Env:         sysinfo.Fingerprint(),
	}
	if err := r.store.CreateRun(run); err != nil {
		return 0, err
	}
	r.useSpec(spec)
	if err := r.own(run.ID); err != nil {
		return run.ID, err
	}
	cases := r.prepareCases(spec)
	if err := r.store.AddCases(run.ID, cases); err != nil {
		return run.ID, err
	}
	r.prog = progress.New(r.opts.Progress, cases)
	r.prog.Printf("run %d: scenario %q, %d cases, token %s", run.ID, spec.Name, len(cases), r.token)
	order := shuffle(len(cases), seed, run.Order)
	if run.Order != OrderSequential {
		r.prog.Printf("cases in shuffled order (seed %d; --order sequential to keep the scenario's)", seed)
	}
	return run.ID, r.execute(ctx, run.ID, run.Started, cases, order, nil)
}

// prepareCases expands a spec into the cases a run stores, with the
// settings they resolve to on this machine.
func (r *Runner) prepareCases(spec *scenario.Spec) []model.Case {
	cases := spec.Expand()
	for i := range cases {
		site.RecordSettings(&cases[i])
		site.RecordAccel(&cases[i], r.token)
		if r.opts.TargetCIPct > 0 || r.opts.Decide != nil {
			cases[i].Params.TargetCIPct = r.opts.TargetCIPct
			cases[i].Params.MaxSamples = max(r.opts.MaxSamples, cases[i].Params.Samples)
			cases[i].Params.TimeBudgetMS = r.opts.TimeBudget.Milliseconds()
		}
		cases[i].Params.MaxStealPct = r.opts.MaxStealPct
		cases[i].Params.KeepCPUsAwake = r.opts.KeepCPUsAwake.For(cases[i].Workload)
	}
	return cases
}

// execute runs cases[i] for each i in order, those of one path together
// in turns (turns.go), going on from prior[i] (the samples a resumed
// case already has; prior may be nil), and stores how the run ended.
func (r *Runner) execute(ctx context.Context, runID int64, started time.Time, cases []model.Case, order []int, prior [][]model.Sample) error {
	spin := newSpinners(r, cases)
	defer spin.stop()
	var runErr error
	for _, g := range r.inTurns(cases, order) {
		if ctx.Err() != nil {
			break
		}
		// The cases of a group share their workload, and so whether
		// they keep the CPUs awake (a resumed case as it did at first).
		if err := spin.want(cases[g[0]].Params.KeepCPUsAwake); err != nil {
			runErr = err
			break
		}
		cs := make([]*model.Case, len(g))
		done := make([][]model.Sample, len(g))
		for k, i := range g {
			cs[k] = &cases[i]
			if prior != nil {
				done[k] = prior[i]
			}
		}
		if err := r.runTurns(ctx, cs, done); err != nil {
			// Errors that are not the case's own (the store failing) end the run.
			runErr = err
			break
		}
	}
	status := "done"
	switch {
	case runErr != nil:
		status = "failed"
	case ctx.Err() != nil:
		status = "interrupted"
	}
	if err := r.store.FinishRun(runID, status, time.Now()); err != nil {
		runErr = errors.Join(runErr, err)
	}
	r.prog.Printf("run %d %s in %s", runID, status, time.Since(started).Round(time.Second))
	if runErr == nil && ctx.Err() != nil {
		runErr = ctx.Err()
	}
	return runErr
}

// recordOutcome stores how measuring c ended, err being what ended it.
// Only a failure to store is returned.
func (r *Runner) recordOutcome(ctx context.Context, c *model.Case, err error) error {
	status, reason := model.StatusOK, ""
	var storeErr *storeError
	switch {
	case errors.As(err, &storeErr):
		return storeErr.err
	case errors.Is(err, mode.ErrUnsupported), errors.Is(err, driver.ErrCannotRun):
		status, reason = model.StatusSkipped, err.Error()
	case ctx.Err() != nil:
		status, reason = model.StatusPending, "interrupted"
	case err != nil:
		status, reason = model.StatusFailed, err.Error()
	}
	r.prog.EndCase(c, status, reason)
	if status == model.StatusPending {
		return nil
	}
	return r.whileLocked(ctx, fmt.Sprintf("the status of case %d", c.Index), func() error { return r.store.SetCaseStatus(c.ID, status, reason) })
}

// storePatience bounds how long a run holds a result while another writer
// keeps the store locked.
const storePatience = 10 * time.Minute

// whileLocked runs a store write, and runs it again for as long as
// another writer holds the database locked past its busy timeout, up to
// storePatience, saying so each time: what was measured stays in memory
// until it is stored, rather than being lost with the run.
func (r *Runner) whileLocked(ctx context.Context, what string, write func() error) error {
	start := time.Now()
	for {
		err := write()
		waited := time.Since(start).Round(time.Second)
		switch {
		case err == nil:
			if waited >= time.Second {
				r.prog.Printf("stored %s after waiting %s for the store", what, waited)
			}
			return nil
		case !store.Locked(err):
			return err
		case waited >= storePatience || ctx.Err() != nil:
			return fmt.Errorf("%w: another writer held the store for %s; %s was not stored", err, waited, what)
		}
		r.prog.Printf("the store is locked by another writer (waited %s); %s is kept and will be stored when it is free", waited, what)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// storeError marks a failure to store a result, which ends the run.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }

// useSpec takes the scenario's hosts and cluster sections for the cases
// to come.
func (r *Runner) useSpec(spec *scenario.Spec) {
	var hosts []site.AgentHost
	for _, h := range spec.Hosts {
		hosts = append(hosts, site.AgentHost{Name: h.Name, Addr: h.Agent, Credentials: agent.Credentials{CA: h.CA, Cert: h.Cert, Key: h.Key}})
	}
	r.agents = site.NewAgents(hosts)
	r.clusters = site.NewClusters(cluster.Config{Swarm: spec.Swarm, Kubernetes: spec.Kubernetes}, r.token)
}

// placerFor is where a case's path is built: on the cluster its mode
// names, across agents where the scenario maps its hosts, or here.
func (r *Runner) placerFor(c *model.Case) site.Placer {
	switch {
	case site.OnCluster(c):
		return r.clusters
	case r.agents.Spans(c.Topology):
		return r.agents
	}
	return r.local
}

// buildPath builds and places what cases measure in turns on one path,
// the first of them leading, pinned as its placement says, and records
// on each case where its endpoints ran. A mode that publishes ports
// before servers exist publishes those of every case's engine.
func (r *Runner) buildPath(ctx context.Context, cases []*model.Case, plan site.Plan) (*site.Path, error) {
	lead := cases[0]
	engines := make([]string, len(cases))
	for i, c := range cases {
		engines[i] = c.Engine
	}
	p, err := r.placerFor(lead).Place(ctx, lead, plan, driver.AllPorts(engines))
	if err != nil {
		return nil, err
	}
	p.Pin(plan.SenderCPUs, plan.ReceiverCPUs)
	if p.ServerNode == "" && p.ClientNode == "" && p.ModeConfig == "" {
		return p, nil
	}
	for _, c := range cases {
		c.Params.ServerNode, c.Params.ClientNode = p.ServerNode, p.ClientNode
		if p.ModeConfig != "" {
			c.Params.ModeConfig = p.ModeConfig
		}
		if err := r.store.SetCaseParams(c.ID, c.Params); err != nil {
			return nil, errors.Join(&storeError{err}, p.Close())
		}
	}
	return p, nil
}

// warmUp runs the case's warm-up, whose sample is discarded.
func (r *Runner) warmUp(ctx context.Context, drv driver.Driver, p *site.Path, c *model.Case) error {
	if c.Params.WarmupMS <= 0 {
		return nil
	}
	r.prog.Phase(c, "warm-up")
	if _, err := takeOnPath(ctx, drv, p, *c, time.Duration(c.Params.WarmupMS)*time.Millisecond, nil); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	return nil
}

// errDaemonDied ends a sample whose network lost a daemon; the case's
// reason then names the daemon (endTurns).
var errDaemonDied = errors.New("stopped: a daemon or guest of the case's network died")

// takeOnPath takes a sample, ending it as soon as a daemon of the path's
// network dies: with ovs-vswitchd gone, a client waited out its socket's
// 60 s timeout before its case failed.
func takeOnPath(ctx context.Context, drv driver.Driver, p *site.Path, c model.Case, d time.Duration, prof measure.Profiler) (model.Sample, error) {
	died := p.Died()
	if died == nil {
		return measure.Take(ctx, drv, p, c, d, prof)
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-died:
			cancel(errDaemonDied)
		case <-done:
		}
	}()
	s, err := measure.Take(sctx, drv, p, c, d, prof)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(sctx), errDaemonDied) {
		err = errDaemonDied
	}
	return s, err
}

// takeSample takes and stores the case's next sample, appending it to
// taken, unless the case has enough; it reports whether it took one.
func (r *Runner) takeSample(ctx context.Context, drv driver.Driver, p *site.Path, c *model.Case, prof measure.Profiler, taken *[]model.Sample) (bool, error) {
	i := len(*taken)
	if stop, stoppedBy := enoughSamples(c.Params, primaries(c, *taken)); stop {
		if stoppedBy != "" {
			c.Outcome.StoppedBy = stoppedBy
			if err := r.store.SetCaseOutcome(c.ID, c.Outcome); err != nil {
				return false, &storeError{err}
			}
		}
		return false, nil
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	r.prog.Sample(c, i)
	var s model.Sample
	for {
		var err error
		s, err = takeOnPath(ctx, drv, p, *c, time.Duration(c.Params.DurationMS)*time.Millisecond, prof)
		if err != nil {
			return false, fmt.Errorf("sample %d: %w", i+1, err)
		}
		if !disturbed(c.Params, c.Outcome.Retaken, s) {
			break
		}
		c.Outcome.Retaken++
		if err := r.store.SetCaseOutcome(c.ID, c.Outcome); err != nil {
			return false, &storeError{err}
		}
		r.prog.Retake(c, i, s.Values[model.CPUStealPct])
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
	s.Index = i
	if err := r.whileLocked(ctx, fmt.Sprintf("sample %d of case %d", i+1, c.Index), func() error { return r.store.AddSample(c.ID, s) }); err != nil {
		return false, &storeError{err}
	}
	*taken = append(*taken, s)
	r.prog.SampleDone(c, s)
	return true, nil
}

// caseOrder is the order this runner's new runs take their cases in.
func (r *Runner) caseOrder() string {
	if r.opts.Order == OrderSequential {
		return OrderSequential
	}
	return OrderShuffled
}

// shuffle is the sequence n cases run in: shuffled by seed, or as listed.
func shuffle(n int, seed int64, order string) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if order != OrderSequential {
		rng := rand.New(rand.NewPCG(uint64(seed), 0))
		rng.Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	return idx
}

// disturbed reports whether a sample is to be taken again because the
// hypervisor took more CPU during it than the case tolerates, after it
// retook retaken samples. A case drops at most as many samples as it may
// take, so it ends after twice its samples at most.
func disturbed(p model.Params, retaken int, s model.Sample) bool {
	return p.MaxStealPct > 0 && s.Values[model.CPUStealPct] > p.MaxStealPct && retaken < max(p.Samples, p.MaxSamples)
}

// enoughSamples decides, before the next sample, whether a case with the
// primary metric values so far has been sampled enough, and why when it
// may take more than its samples. Without a target interval, a case
// whose MaxSamples exceed its samples goes on until its path's turns are
// decided (Options.Decide) or MaxSamples.
func enoughSamples(p model.Params, primary []float64) (bool, string) {
	n := len(primary)
	if p.TargetCIPct <= 0 && p.MaxSamples <= p.Samples {
		return n >= p.Samples, ""
	}
	if p.TargetCIPct > 0 && n >= max(p.Samples, 2) {
		s := stats.Summarize(primary)
		if s.Mean != 0 && 100*s.CIHalfWidth()/math.Abs(s.Mean) <= p.TargetCIPct {
			return true, "target_ci"
		}
	}
	if n >= p.MaxSamples {
		return true, "max_samples"
	}
	return false, ""
}

// primaries are the case's primary metric over the samples.
func primaries(c *model.Case, samples []model.Sample) []float64 {
	xs := make([]float64, len(samples))
	for i, s := range samples {
		xs[i] = s.Values[workload.PrimaryMetric(c.Workload)]
	}
	return xs
}
