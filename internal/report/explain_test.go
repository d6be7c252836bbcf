package report

import (
	"strings"
	"testing"

	"cnbench/internal/explain"
	"cnbench/internal/model"
)

// TestExplanationSaysWhyItIsMissing: an explained case without a profile
// says why: the runner's note, the samples' notes, or its status.
func TestExplanationSaysWhyItIsMissing(t *testing.T) {
	explained := model.Params{Explain: true}
	for _, c := range []struct {
		name string
		res  model.CaseResult
		want string
	}{
		{"runner's note", model.CaseResult{Case: model.Case{Params: explained, Outcome: model.Outcome{ExplainNote: "perf is not installed"}, Status: model.StatusOK}}, "perf is not installed"},
		{"samples' notes", model.CaseResult{Case: model.Case{Params: explained, Status: model.StatusOK},
			Samples: []model.Sample{{Profile: &model.Profile{Note: "profile: perf exited"}}}}, "profile: perf exited"},
		{"interrupted", model.CaseResult{Case: model.Case{Params: explained, Status: model.StatusPending}}, "(the case is pending)"},
	} {
		e := explanationOf(c.res)
		if e == nil || e.Breakdown != nil || !strings.Contains(e.Note, c.want) {
			t.Errorf("%s: explanation %+v, want a note holding %q", c.name, e, c.want)
		}
	}
	if e := explanationOf(model.CaseResult{Case: model.Case{Status: model.StatusOK}}); e != nil {
		t.Errorf("a case not asked to be explained has an explanation: %+v", e)
	}
}

// TestSummaryNamesWhereTheCostSits: shares of a positive difference, and
// for a case no dearer than host the stages' moves in the unit.
func TestSummaryNamesWhereTheCostSits(t *testing.T) {
	c := model.Case{Mode: "bridge", Topology: "chc"}
	dearer := &Explanation{VsHost: &explain.Delta{Unit: "GB", TotalS: 0.12, Stages: []explain.StageDelta{
		{Stage: "bridge", DeltaS: 0.05, SharePct: 41.7}, {Stage: "netfilter", DeltaS: 0.03, SharePct: 25}, {Stage: "tcp", DeltaS: 0.0006, SharePct: 0.5}}}}
	if got, want := dearer.Summary(c), "bridge/chc costs +0.12 CPU-s/GB over host: bridge 42%, netfilter 25%"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	cheaper := &Explanation{VsHost: &explain.Delta{Unit: "tx", TotalS: -1e-6, Stages: []explain.StageDelta{
		{Stage: "sched", DeltaS: -2e-6}, {Stage: "macvlan", DeltaS: 1e-6}}}}
	if got, want := cheaper.Summary(c), "bridge/chc costs no more than host: -1 CPU-us/tx; by stage: sched -2, macvlan +1"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}
