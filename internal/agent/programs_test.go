package agent_test

import (
	"testing"
	"time"

	"cnbench/internal/model"
	"cnbench/internal/workload"
)

// TestExternalEnginesThroughAgents runs iperf3, netperf and sockperf on
// two machines' agents, as users cross-check cnbench's own engine across
// hosts: each agent starts its side's program in the endpoint's
// namespace and cgroup, whose CPU counts as the endpoint's; what a tool
// does not run is skipped; and the agents hold nothing after.
func TestExternalEnginesThroughAgents(t *testing.T) {
	l := newLab(t, "m1", "m2", "ctl")
	agents := []*process{l.startAgent("m1", 5*time.Second), l.startAgent("m2", 5*time.Second)}
	body := "modes: [bridge]\ntopologies: [chhc]\nworkloads: [tcp_stream, tcp_rr]\nengines: [iperf3, netperf, sockperf]\nduration: 1s\nwarmup: 0s\nsamples: 1\n"
	res := l.run(t, l.scenario(t, "tools", body, true))
	ran := 0
	for _, c := range res.Cases {
		if c.Status == model.StatusSkipped {
			continue
		}
		if c.Status != model.StatusOK {
			t.Errorf("%s: %s: %s", c.Key, c.Status, c.Reason)
			continue
		}
		ran++
		v := c.Samples[0].Values
		t.Logf("%-55s %10.4g  sender %5.1f%%  receiver %5.1f%%", c.Key, v[workload.PrimaryMetric(c.Workload)], v[model.CPUSenderPct], v[model.CPUReceiverPct])
		if v[workload.PrimaryMetric(c.Workload)] <= 0 || v[model.CPUSenderPct] <= 0 || v[model.CPUReceiverPct] <= 0 {
			t.Errorf("%s: %v; want traffic, and each side's program's CPU", c.Key, v)
		}
		if c.Params.ServerNode == "" || c.Params.ClientNode == "" {
			t.Errorf("%s: server on %q, client on %q; want the agents' machines named", c.Key, c.Params.ServerNode, c.Params.ClientNode)
		}
	}
	if ran != 4 {
		t.Errorf("%d cases ran, want iperf3's and netperf's streams and netperf's and sockperf's round trips", ran)
	}
	for i, ag := range agents {
		if left := leftovers(t, ag.cmd.Process.Pid, agentTokens(ag)); len(left) != 0 {
			t.Errorf("agent %d holds after the run: %v", i+1, left)
		}
	}
}
