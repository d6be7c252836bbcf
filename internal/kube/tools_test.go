package kube

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cnbench/internal/model"
)

// TestExternalEnginesRunInPods runs iperf3, netperf, sockperf and ping
// in pods on two nodes, pod to pod and through a Service, as k8s-netperf
// runs its tools: each agent starts its side's tool from the image, the
// client dials the pod or the Service (netperf's data port too, which
// listens only once its test runs), the tool's CPU counts as the pod's
// (sockperf's UDP stream reads what arrived from the server pod's
// counters, through its agent), and what a tool does not run is skipped.
func TestExternalEnginesRunInPods(t *testing.T) {
	c := requireLab(t)
	t.Parallel() // its numbers need only be there: it runs beside the other runs that hold theirs loosely
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	scenario := filepath.Join(t.TempDir(), "tools.yaml")
	body := "modes: [k8s:pod, k8s:service]\ntopologies: [chhc]\nworkloads: [tcp_stream, udp_stream, ping]\nengines: [iperf3, netperf, sockperf, ping]\nsamples: 1\nduration: 1s\nwarmup: 0s\n"
	if err := os.WriteFile(scenario, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	res, out := runOnLab(ctx, t, c, scenario)
	t.Logf("controller:\n%s", out)
	ran := map[string]bool{}
	for _, cs := range res.Cases {
		if cs.Status == model.StatusSkipped {
			// A ClusterIP answers no echo: ping through a Service is
			// skipped, saying so, and runs pod to pod.
			if cs.Engine == "ping" && cs.Workload == "ping" && cs.Mode == "k8s:service" && !strings.Contains(cs.Reason, "answers no echo") {
				t.Errorf("%s: skipped because %q; want: a ClusterIP answers no echo", cs.Key, cs.Reason)
			}
			continue
		}
		ran[cs.Mode+" "+cs.Engine+" "+cs.Workload] = true
		checkMeasured(t, cs)
		// Each side's program, netserver's children included, counts
		// as its pod's; an echo's server is the kernel alone.
		if v := cs.Samples[0].Values; cs.Status == model.StatusOK && (v[model.CPUSenderPct] <= 0 || (v[model.CPUReceiverPct] <= 0 && cs.Workload != "ping")) {
			t.Errorf("%s: sender %.1f%%, receiver %.1f%% of a core: a pod's %s is not counted", cs.Key, v[model.CPUSenderPct], v[model.CPUReceiverPct], cs.Engine)
		}
	}
	for _, want := range []string{"k8s:pod iperf3 tcp_stream", "k8s:pod netperf tcp_stream", "k8s:pod iperf3 udp_stream", "k8s:pod sockperf udp_stream", "k8s:pod netperf udp_stream", "k8s:pod ping ping",
		"k8s:service iperf3 tcp_stream", "k8s:service netperf tcp_stream", "k8s:service iperf3 udp_stream", "k8s:service sockperf udp_stream", "k8s:service netperf udp_stream"} {
		if !ran[want] {
			t.Errorf("%s did not run in the pods", want)
		}
	}
	checkNothingLeft(ctx, t, c, out)
}
