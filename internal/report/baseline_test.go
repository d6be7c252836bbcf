package report

import (
	"math"
	"testing"

	"cnbench/internal/model"
)

// TestSwarmModesAgainstTheSwarmsHostNetwork: a swarm's overlay is compared
// with the same nodes' host network, never with this machine's host mode,
// and machines must match too.
func TestSwarmModesAgainstTheSwarmsHostNetwork(t *testing.T) {
	nodes := model.Params{Flows: 1, ServerNode: "a", ClientNode: "b"}
	res := &model.RunResult{Cases: []model.CaseResult{
		okCase(0, "host", model.Params{Flows: 1}, map[string]float64{model.ThroughputBPS: 40e9}),
		okCase(1, "swarm:host", nodes, map[string]float64{model.ThroughputBPS: 20e9}),
		okCase(2, "swarm:overlay", nodes, map[string]float64{model.ThroughputBPS: 15e9}),
		okCase(3, "bridge", nodes, map[string]float64{model.ThroughputBPS: 15e9}),
	}}
	rep := Build(res)
	if rep.Cases[1].OverheadPct != nil {
		t.Errorf("swarm:host, the swarm's baseline, has overheads %v", rep.Cases[1].OverheadPct)
	}
	if got := rep.Cases[2].OverheadPct[model.ThroughputBPS]; math.Abs(got-25) > 1e-9 {
		t.Errorf("swarm:overlay overhead %v, want 25 (against swarm:host)", got)
	}
	if rep.Cases[3].OverheadPct != nil {
		t.Errorf("a case on nodes a and b measured against host mode on this machine: %v", rep.Cases[3].OverheadPct)
	}
}
