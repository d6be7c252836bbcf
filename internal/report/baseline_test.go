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

// TestKubernetesModesAgainstHostNetworkPods: a pod path is compared with
// hostNetwork pods on the same nodes, and neither with a swarm's nor
// this machine's host mode.
func TestKubernetesModesAgainstHostNetworkPods(t *testing.T) {
	nodes := model.Params{Flows: 1, ServerNode: "n1", ClientNode: "n2"}
	res := &model.RunResult{Cases: []model.CaseResult{
		okCase(0, "host", nodes, map[string]float64{model.ThroughputBPS: 40e9}),
		okCase(1, "swarm:host", nodes, map[string]float64{model.ThroughputBPS: 30e9}),
		okCase(2, "k8s:hostnetwork", nodes, map[string]float64{model.ThroughputBPS: 20e9}),
		okCase(3, "k8s:service", nodes, map[string]float64{model.ThroughputBPS: 16e9}),
	}}
	rep := Build(res)
	if rep.Cases[2].OverheadPct != nil {
		t.Errorf("k8s:hostnetwork, the cluster's baseline, has overheads %v", rep.Cases[2].OverheadPct)
	}
	if got := rep.Cases[3].OverheadPct[model.ThroughputBPS]; math.Abs(got-20) > 1e-9 {
		t.Errorf("k8s:service overhead %v, want 20 (against k8s:hostnetwork)", got)
	}
}
