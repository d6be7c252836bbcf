package runner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"cnbench/internal/cleanup"
	"cnbench/internal/model"
	"cnbench/internal/scenario"
)

const resumeScenario = `
name: resume
duration: 200ms
warmup: 0s
samples: 3
modes: [bridge]
topologies: [chc, chhc]
workloads: [tcp_stream]
`

// TestResumeTakesOnlyMissingSamples interrupts a run in its second case
// and requires the resume to measure only that case's missing samples,
// numbered on from the stored ones, and to keep every stored sample.
func TestResumeTakesOnlyMissingSamples(t *testing.T) {
	r, st := newTestRunner(t)
	spec, err := scenario.Parse("resume.yaml", []byte(resumeScenario), vocab())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.opts.Progress = cancelOn{testWriter{t}, "[2/2]   sample 2/3", cancel}
	r.opts.Order = OrderSequential
	id, err := r.Run(ctx, spec)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v, want it cancelled", err)
	}
	before, err := st.LoadRun(id)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(before.Cases[1].Samples); before.Cases[1].Status != model.StatusPending || got != 1 {
		t.Fatalf("second case %s with %d samples, want pending with 1", before.Cases[1].Status, got)
	}

	r2, _ := newTestRunnerOn(t, st)
	if err := r2.Resume(context.Background(), id); err != nil {
		t.Fatalf("resume: %v", err)
	}
	after, err := st.LoadRun(id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Run.Status != "done" {
		t.Errorf("run status %q after resume, want done", after.Run.Status)
	}
	for i, c := range after.Cases {
		if c.Status != model.StatusOK || len(c.Samples) != 3 {
			t.Errorf("case %s: %s with %d samples, want ok with 3", c.Key, c.Status, len(c.Samples))
			continue
		}
		for j, s := range c.Samples {
			if s.Index != j {
				t.Errorf("case %s: sample %d has index %d", c.Key, j, s.Index)
			}
		}
		// Stored samples are kept as they were, not measured again.
		for j, s := range before.Cases[i].Samples {
			if !c.Samples[j].Started.Equal(s.Started) {
				t.Errorf("case %s: sample %d was measured again", c.Key, j)
			}
		}
	}
	if err := r2.Resume(context.Background(), id); !errors.Is(err, ErrRunComplete) {
		t.Errorf("second resume: %v, want ErrRunComplete", err)
	}
}

// TestResumeRefusesLiveRun stores a running run owned by this (live)
// process, with no cases yet, as a run killed right after it was created
// would be. The resume must refuse while the owner lives, and once the
// owner is gone must add the scenario's cases and measure them all.
func TestResumeRefusesLiveRun(t *testing.T) {
	r, st := newTestRunner(t)
	spec, err := scenario.Parse("resume.yaml", []byte(resumeScenario), vocab())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := spec.YAML()
	if err != nil {
		t.Fatal(err)
	}
	run := &model.Run{Scenario: spec.Name, ScenarioDoc: string(doc), Started: time.Now(), Status: "running", Seed: 7}
	if err := st.CreateRun(run); err != nil {
		t.Fatal(err)
	}
	self, err := cleanup.Self()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetRunOwner(run.ID, self.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := r.Resume(context.Background(), run.ID); !errors.Is(err, ErrRunAlive) {
		t.Fatalf("resume of a live run: %v, want ErrRunAlive", err)
	}
	// The same PID with another start time is a process that has ended.
	gone := self
	gone.StartTick++
	if err := st.SetRunOwner(run.ID, gone.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := r.Resume(context.Background(), run.ID); err != nil {
		t.Fatalf("resume of a dead run: %v", err)
	}
	res, err := st.LoadRun(run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Status != "done" || len(res.Cases) != 2 {
		t.Fatalf("run %s with %d cases, want done with 2", res.Run.Status, len(res.Cases))
	}
	for _, c := range res.Cases {
		if c.Status != model.StatusOK || len(c.Samples) != 3 {
			t.Errorf("case %s: %s with %d samples, want ok with 3", c.Key, c.Status, len(c.Samples))
		}
	}
}

// recorder keeps what a runner's progress says, and logs it.
type recorder struct {
	testWriter
	said *strings.Builder
}

func (r recorder) Write(p []byte) (int, error) {
	r.said.Write(p)
	return r.testWriter.Write(p)
}

// TestResumeKeepsTheRunsOrder interrupts a run taken in the scenario's
// order and resumes it with a runner left at the default, shuffled: the
// cases left (five or six, as the first one had stored its sample or
// not) run in the scenario's order still.
func TestResumeKeepsTheRunsOrder(t *testing.T) {
	r, st := newTestRunner(t)
	spec, err := scenario.Parse("order.yaml", []byte(`{name: order, duration: 200ms, warmup: 0s, samples: 1,
  modes: [host], topologies: [chc], workloads: [tcp_stream, tcp_rr, udp_stream, udp_rr, tcp_crr, ping]}`), vocab())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.opts.Progress = cancelOn{testWriter{t}, "[1/6]   sample 1/1", cancel}
	r.opts.Order = OrderSequential
	id, err := r.Run(ctx, spec)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v, want it cancelled", err)
	}
	before, err := st.LoadRun(id)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range before.Cases {
		if c.Status == model.StatusPending {
			want = append(want, c.Key)
		}
	}
	if len(want) < 5 {
		t.Fatalf("%d cases left to resume, want at least 5 for a shuffle to show", len(want))
	}
	r2, _ := newTestRunnerOn(t, st)
	said := &strings.Builder{}
	r2.opts.Progress = recorder{testWriter{t}, said}
	if err := r2.Resume(context.Background(), id); err != nil {
		t.Fatalf("resume: %v", err)
	}
	res, err := st.LoadRun(id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Order != OrderSequential {
		t.Errorf("run recorded order %q", res.Run.Order)
	}
	var ran []string
	for _, line := range strings.Split(said.String(), "\n") {
		for _, c := range res.Cases {
			if strings.Contains(line, "] "+c.Key+" ") && !slices.Contains(ran, c.Key) {
				ran = append(ran, c.Key)
			}
		}
	}
	if !slices.Equal(ran, want) {
		t.Errorf("resumed in the order\n%s\nwant the scenario's\n%s", strings.Join(ran, "\n"), strings.Join(want, "\n"))
	}
}
