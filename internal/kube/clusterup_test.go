package kube

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"cnbench/internal/kubelab"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/store/storetest"
)

// TestClusterUpRunDown brings a second local cluster up with `cnbench
// cluster up`, as a user would, runs on it, from this machine's own
// namespace through the kubeconfig cluster up wrote, the three paths in
// both placements over TCP, UDP and round trips with the names
// Kubernetes' tools give the placements (the command the docs show), and
// brings it down with `cnbench cluster down`: every case measures, on the
// nodes it names, paired with hostNetwork, with the nodes' CPU and the
// record of what the cluster runs; the streams across nodes crossed the
// client node's link (its counters); and nothing of the cluster is left.
func TestClusterUpRunDown(t *testing.T) {
	requireLab(t) // the binary, and a machine that runs clusters
	t.Parallel()  // its own cluster; its checks hold under the other tests' load
	bin := binary
	dir := t.TempDir()
	kc := filepath.Join(dir, "lab.kubeconfig")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cli := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("cnbench %v: %v", args, err)
		}
		return code, string(out)
	}

	start := time.Now()
	code, out := cli("cluster", "up", "--kubeconfig", kc)
	t.Logf("cluster up (%v):\n%s", time.Since(start).Round(time.Millisecond), out)
	m := regexp.MustCompile(`cluster ([0-9a-f]{4}) is up`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("cluster up exited %d", code)
	}
	tok := netns.Token(m[1])
	down := false
	t.Cleanup(func() {
		if !down {
			cli("cluster", "down", string(tok))
		}
	})
	if _, err := os.Stat(kc); err != nil {
		t.Fatalf("cluster up wrote no kubeconfig: %v", err)
	}
	if code, out := cli("cluster", "up", "--kubeconfig", kc); code != 2 || !strings.Contains(out, "exists") {
		t.Errorf("a second cluster up onto the same kubeconfig exited %d: %s", code, out)
	}
	code, statusOut := cli("cluster", "status")
	if code != 0 || !strings.Contains(statusOut, "cluster "+string(tok)+": up, process") || !strings.Contains(statusOut, kc) {
		t.Errorf("cluster status exited %d:\n%s", code, statusOut)
	}

	// The client node's link to the other node carries every stream
	// across nodes, pod to pod included, or a path took another way.
	nodes := regexp.MustCompile(`\((` + tok.Name("k8sn1") + `), (` + tok.Name("k8sn2") + `)\)`).FindStringSubmatch(statusOut)
	if nodes == nil {
		t.Fatalf("cluster status names no two nodes:\n%s", statusOut)
	}
	nics := map[string]kubelab.Node{}
	for i, name := range nodes[1:] {
		nics[name] = kubelab.Node{Name: name, Namespace: filepath.Join(netns.RunDir, name), NIC: kubelab.NodeNIC(tok, i+1)}
	}
	before := map[string]uint64{}
	for name, n := range nics {
		before[name] = nicTxBytes(t, n)
	}
	db := filepath.Join(dir, "r.db")
	start = time.Now()
	code, out = cli("run", "--db", db, "--kubeconfig", kc, "--modes", "k8s:hostnetwork,k8s:pod,k8s:service",
		"--topologies", "same-node,cross-node", "--workloads", "tcp_stream,tcp_rr,udp_stream",
		"--samples", "2", "--duration", "300ms", "--warmup", "100ms")
	t.Logf("run (%v):\n%s", time.Since(start).Round(time.Millisecond), out)
	if code != 0 {
		t.Fatalf("run exited %d", code)
	}
	code, rep := cli("report", "--db", db, "--format", "json", "1")
	if code != 0 {
		t.Fatalf("report exited %d: %s", code, rep)
	}
	checkClusterReport(t, rep)
	res := storetest.LoadRun(t, db, 1)
	streamed := map[string]uint64{}
	for _, cs := range res.Cases {
		checkMeasured(t, cs)
		if cs.Topology != "chhc" || (cs.Workload != "tcp_stream" && cs.Workload != "udp_stream") {
			continue
		}
		for _, s := range cs.Samples {
			streamed[cs.Params.ClientNode] += uint64(s.Values[model.ReceivedBytes])
		}
	}
	if len(streamed) == 0 {
		t.Error("no stream across nodes was measured")
	}
	for name, bytes := range streamed {
		n, ok := nics[name]
		if !ok {
			t.Errorf("a client on node %q, not one of the cluster's %v", name, nodes[1:])
			continue
		}
		crossed := nicTxBytes(t, n) - before[name]
		t.Logf("%s's link sent %d bytes; the streams from its pods received %d", name, crossed, bytes)
		if crossed < bytes {
			t.Errorf("%s's link %s sent %d bytes while the streams from it across nodes received %d: some did not cross between the nodes", name, n.NIC, crossed, bytes)
		}
	}

	start = time.Now()
	code, out = cli("cluster", "down", string(tok))
	down = true
	t.Logf("cluster down (%v): %s", time.Since(start).Round(time.Millisecond), out)
	if code != 0 || !strings.Contains(out, "cluster "+string(tok)+" is down") {
		t.Errorf("cluster down exited %d", code)
	}
	if code, out := cli("cluster", "status"); code != 0 || strings.Contains(out, string(tok)) {
		t.Errorf("cluster status after down exited %d: %s", code, out)
	}
	if code, out := cli("cluster", "down", string(tok)); code != 2 || !strings.Contains(out, "no cluster "+strconv.Quote(string(tok))+" is up") {
		t.Errorf("cluster down with none up exited %d: %s", code, out)
	}
	if _, err := os.Stat(kc); err == nil {
		t.Errorf("the kubeconfig %s is left", kc)
	}
	names, err := netns.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if netns.TokenOf(n) == tok {
			t.Errorf("namespace %s is left", n)
		}
	}
	if pids := processesOfToken(tok); len(pids) > 0 {
		t.Errorf("processes of the cluster are left: %v", pids)
	}
}

// checkClusterReport holds each case of the run's JSON report to a
// measurement on the nodes it names, and each path's to a paired ratio
// against hostNetwork.
func checkClusterReport(t *testing.T, rep string) {
	t.Helper()
	var r struct {
		Cases []struct {
			Key, Mode, Topology, Workload, Status, Reason string
			Params                                        model.Params
			Metrics                                       map[string]struct{ Mean float64 }
			Ratio                                         map[string]struct {
				Paired  bool
				Verdict string
			} `json:"vs_host_ratio"`
		}
	}
	if err := json.Unmarshal([]byte(rep), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Cases) != 18 {
		t.Fatalf("%d cases; want 3 modes x 2 topologies x 3 workloads", len(r.Cases))
	}
	for _, c := range r.Cases {
		if c.Status != string(model.StatusOK) {
			t.Errorf("%s: %s (%s)", c.Key, c.Status, c.Reason)
			continue
		}
		if (c.Topology == "chc") != (c.Params.ServerNode == c.Params.ClientNode) || c.Params.ServerNode == "" {
			t.Errorf("%s: server on %q, client on %q", c.Key, c.Params.ServerNode, c.Params.ClientNode)
		}
		if c.Metrics[model.CPUMachinePct].Mean <= 0 || c.Metrics[model.CPUSenderPct].Mean <= 0 {
			t.Errorf("%s: nodes' CPU %.1f%%, sender's %.1f%%", c.Key, c.Metrics[model.CPUMachinePct].Mean, c.Metrics[model.CPUSenderPct].Mean)
		}
		if c.Mode == "k8s:hostnetwork" {
			continue
		}
		primary := map[string]string{"tcp_stream": model.ThroughputBPS, "udp_stream": model.ThroughputBPS, "tcp_rr": model.TransactionsPerS}[c.Workload]
		vs, ok := c.Ratio[primary]
		if !ok || !vs.Paired || vs.Verdict == "" {
			t.Errorf("%s: %s against hostNetwork: %+v; want a paired ratio with a verdict", c.Key, primary, vs)
		}
	}
}

// processesOfToken lists the live processes whose namespace or command
// line names the token.
func processesOfToken(tok netns.Token) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(cmdline), tok.Name("")) {
			if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
				out = append(out, pid)
			}
		}
	}
	return out
}
