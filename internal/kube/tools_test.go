package kube

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cnbench/internal/model"
)

// TestExternalEnginesRunInPods runs iperf3, netperf and sockperf in the
// pods, through a Service, as k8s-netperf does: each agent starts its
// tool from the image, the client dials the Service, the tool's CPU
// counts as the pod's, and what a tool does not run is skipped.
func TestExternalEnginesRunInPods(t *testing.T) {
	c := requireLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	scenario := filepath.Join(t.TempDir(), "tools.yaml")
	body := "modes: [k8s:service]\ntopologies: [chhc]\nworkloads: [tcp_stream, tcp_rr]\nengines: [iperf3, netperf, sockperf]\nsamples: 1\nduration: 1s\nwarmup: 0s\n"
	if err := os.WriteFile(scenario, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	res, out := runOnLab(ctx, t, c, scenario)
	t.Logf("controller:\n%s", out)
	ran := map[string]bool{}
	for _, cs := range res.Cases {
		if cs.Status == model.StatusSkipped {
			continue
		}
		ran[cs.Engine+" "+cs.Workload] = true
		checkMeasured(t, cs)
		// Each side's program, netserver's children included, counts
		// as its pod's.
		if v := cs.Samples[0].Values; cs.Status == model.StatusOK && (v[model.CPUSenderPct] <= 0 || v[model.CPUReceiverPct] <= 0) {
			t.Errorf("%s: sender %.1f%%, receiver %.1f%% of a core: a pod's %s is not counted", cs.Key, v[model.CPUSenderPct], v[model.CPUReceiverPct], cs.Engine)
		}
	}
	for _, want := range []string{"iperf3 tcp_stream", "netperf tcp_stream", "netperf tcp_rr", "sockperf tcp_rr"} {
		if !ran[want] {
			t.Errorf("%s did not run in the pods", want)
		}
	}
	checkNothingLeft(ctx, t, c, out)
}
