package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cnbench/internal/kubelab"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/store/storetest"
	"cnbench/internal/topo"
	"cnbench/internal/workload"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// nicTxBytes reads what a node's link to the other nodes has sent.
func nicTxBytes(t *testing.T, n kubelab.Node) uint64 {
	t.Helper()
	var tx uint64
	err := netns.DoAt(n.Namespace, func() error {
		l, err := netlink.LinkByName(n.NIC)
		if err != nil {
			return err
		}
		tx = l.Attrs().Statistics.TxBytes
		return nil
	})
	if err != nil {
		t.Fatalf("read %s's link %s: %v", n.Name, n.NIC, err)
	}
	return tx
}

// runOnLab runs cnbench run with args on the lab's cluster and returns
// the stored run and what the controller printed.
func runOnLab(ctx context.Context, t *testing.T, c *kubelab.Cluster, args ...string) (*model.RunResult, string) {
	t.Helper()
	return controlOnLab(ctx, t, c, filepath.Join(t.TempDir(), "r.db"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
}

// controlOnLab runs cnbench run with args and --db db where the
// kubeconfig's API server answers: in the control plane's namespace, as
// on a machine of the cluster. It returns run 1 as stored in db and what
// the controller printed.
func controlOnLab(ctx context.Context, t *testing.T, c *kubelab.Cluster, db string, args ...string) (*model.RunResult, string) {
	t.Helper()
	var out bytes.Buffer
	ctl := exec.CommandContext(ctx, binary, append([]string{"run", "--db", db}, args...)...)
	ctl.Stdout, ctl.Stderr = &out, &out
	ctl.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := netns.DoAt(c.ControlPlane, ctl.Start); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Wait(); err != nil {
		t.Fatalf("run %v: %v\n%s", args, err, out.String())
	}
	return storetest.LoadRun(t, db, 1), out.String()
}

// checkNothingLeft fails the test if the run whose controller printed out
// left anything on the cluster.
func checkNothingLeft(ctx context.Context, t *testing.T, c *kubelab.Cluster, out string) {
	t.Helper()
	runTok := regexp.MustCompile(`cases(?: left)?, token ([0-9a-f]{4})`).FindStringSubmatch(out)
	if runTok == nil {
		t.Fatalf("the controller named no run token:\n%s", out)
	}
	left, err := connect(t, c, imageOK, "").Leftovers(ctx, netns.Token(runTok[1]))
	if err != nil || len(left) > 0 {
		t.Errorf("the run left on the cluster: %v (%v)", left, err)
	}
}

func checkCase(t *testing.T, cs model.CaseResult) {
	t.Helper()
	// A ClusterIP answers no echo: ping through a Service is skipped,
	// saying so, and runs on the other paths.
	if cs.Workload == workload.Ping && cs.Mode == "k8s:service" {
		if cs.Status != model.StatusSkipped || !strings.Contains(cs.Reason, "answers no echo") {
			t.Errorf("%s: %s (%s), want skipped: a ClusterIP answers no echo", cs.Key, cs.Status, cs.Reason)
		}
		return
	}
	if cs.Status == model.StatusOK && !cs.Outcome.Paired {
		t.Errorf("%s: not paired with the other modes", cs.Key)
	}
	checkMeasured(t, cs)
}

// checkMeasured holds an ok case to its nodes, its traffic, its CPU and
// its record of the cluster.
func checkMeasured(t *testing.T, cs model.CaseResult) {
	t.Helper()
	if cs.Status != model.StatusOK {
		t.Errorf("%s: %s: %s", cs.Key, cs.Status, cs.Reason)
		return
	}
	rate, unit := workload.PrimaryMetric(cs.Workload), 1.0
	if rate == model.ThroughputBPS {
		unit = 1e9
	}
	var mean, machine, sender float64
	for _, s := range cs.Samples {
		mean += s.Values[rate] / unit / float64(len(cs.Samples))
		machine += s.Values[model.CPUMachinePct] / float64(len(cs.Samples))
		sender += s.Values[model.CPUSenderPct] / float64(len(cs.Samples))
	}
	t.Logf("%-16s %-5s %-10s %-8s %9.2f %s  sender %5.1f%%  nodes %5.1f%%  server on %s, client on %s", cs.Mode, cs.Topology, cs.Workload, cs.Engine,
		mean, map[string]string{model.ThroughputBPS: "Gbit/s", model.TransactionsPerS: "tx/s", model.RTTAvgUS: "µs round trip"}[rate], sender, machine, cs.Params.ServerNode, cs.Params.ClientNode)
	if mean < 0.01 {
		t.Errorf("%s: %.3f %s; the engines did not exchange traffic worth the name", cs.Key, mean, rate)
	}
	if sameNode := cs.Params.ServerNode == cs.Params.ClientNode; cs.Params.ServerNode == "" || (cs.Topology == topo.CHC) != sameNode {
		t.Errorf("%s: server on %q, client on %q; want one node in chc and two in chhc", cs.Key, cs.Params.ServerNode, cs.Params.ClientNode)
	}
	checkDescription(t, cs)
	// The nodes' whole CPU holds at least the sender's engine.
	if machine <= 0 || machine < sender {
		t.Errorf("%s: nodes busy %.1f%% of a core, sender's engine %.1f%%: the nodes' CPU is missing or short", cs.Key, machine, sender)
	}
}

// TestKilledRunIsSweptFromTheCluster kills a run while its pods measure,
// as a user's kill -9 or a lost machine would, and has `cnbench cleanup
// --kubeconfig` delete what it left on the cluster, and only that.
func TestKilledRunIsSweptFromTheCluster(t *testing.T) {
	c := requireLab(t)
	t.Parallel() // cleanup leaves the other runs' objects alone, as it must
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k := connect(t, c, imageOK, "")
	// Another run's namespace, which this machine knows nothing of.
	other := netns.NewToken()
	if _, err := k.namespace(ctx, other); err != nil {
		t.Fatal(err)
	}
	defer k.Close()

	db := filepath.Join(t.TempDir(), "r.db")
	ctl, tok := startMeasuring(ctx, t, c, k, db, 3)
	ctl.Process.Kill()
	ctl.Wait()
	left, _ := k.Leftovers(ctx, tok)
	t.Logf("killed; on the cluster: %v", left)

	sweep := exec.CommandContext(ctx, binary, "cleanup", "--kubeconfig", c.Kubeconfig)
	var out bytes.Buffer
	sweep.Stdout, sweep.Stderr = &out, &out
	if err := netns.DoAt(c.ControlPlane, sweep.Start); err != nil {
		t.Fatal(err)
	}
	if err := sweep.Wait(); err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out.String())
	}
	t.Logf("cleanup:\n%s", out.String())
	if !strings.Contains(out.String(), "deleted on the cluster: namespace "+tok.Name("k8s")) {
		t.Errorf("cleanup did not say it deleted the run's namespace")
	}
	if !strings.Contains(out.String(), "left alone on the cluster: namespace "+other.Name("k8s")) {
		t.Errorf("cleanup did not leave the other run's namespace alone, saying so")
	}
	for {
		left, err := k.Leftovers(ctx, tok)
		if err == nil && len(left) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("after cleanup the cluster still holds %v (%v)", left, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	resumeOnLab(ctx, t, c, db)
}

// resumeOnLab resumes the killed run stored in db: it measures what was
// left of its case on the cluster its stored scenario names, and leaves
// nothing there.
func resumeOnLab(ctx context.Context, t *testing.T, c *kubelab.Cluster, db string) {
	t.Helper()
	res, out := controlOnLab(ctx, t, c, db, "--resume", "1")
	if len(res.Cases) != 1 || res.Cases[0].Status != model.StatusOK || len(res.Cases[0].Samples) != 3 {
		t.Fatalf("resumed: %+v; want its one case ok with 3 samples\n%s", res.Cases, out)
	}
	checkNothingLeft(ctx, t, c, out)
}

// TestHungUpRunRemovesItsPods ends a run with SIGHUP (its terminal went
// away) while its pods measure: it exits with 129, and what it made on
// the cluster is gone by then, with no cleanup.
func TestHungUpRunRemovesItsPods(t *testing.T) {
	c := requireLab(t)
	t.Parallel() // it checks its own run's objects only
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k := connect(t, c, imageOK, "default")
	ctl, tok := startMeasuring(ctx, t, c, k, filepath.Join(t.TempDir(), "r.db"), 100)
	began := time.Now()
	ctl.Process.Signal(syscall.SIGHUP)
	err := ctl.Wait()
	t.Logf("exited %v after %s", err, time.Since(began).Round(time.Millisecond))
	if code := ctl.ProcessState.ExitCode(); code != 128+int(syscall.SIGHUP) {
		t.Errorf("exit code %d, want %d", code, 128+int(syscall.SIGHUP))
	}
	left, err := k.Leftovers(ctx, tok)
	if err != nil || len(left) > 0 {
		t.Errorf("the hung-up run left on the cluster: %v (%v)", left, err)
	}
}

// startMeasuring starts a long run on the lab and returns once its pods
// exist, with its token.
func startMeasuring(ctx context.Context, t *testing.T, c *kubelab.Cluster, k *Cluster, db string, samples int) (*exec.Cmd, netns.Token) {
	t.Helper()
	ctl := exec.CommandContext(ctx, binary, "run", "--kubeconfig", c.Kubeconfig, "--db", db,
		"--modes", "k8s:pod", "--topologies", "chc", "--workloads", "tcp_stream", "--samples", strconv.Itoa(samples), "--duration", "1s")
	stdout, err := ctl.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	ctl.Stderr = ctl.Stdout
	ctl.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := netns.DoAt(c.ControlPlane, ctl.Start); err != nil {
		t.Fatal(err)
	}
	tok := awaitToken(t, stdout)
	// The deployment numbered 1 has a pod once the run measures.
	for {
		left, _ := k.Leftovers(ctx, tok)
		if slices.ContainsFunc(left, func(s string) bool { return strings.HasPrefix(s, "pod ") }) {
			return ctl, tok
		}
		if ctx.Err() != nil {
			t.Fatal("the run's pods never came")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// awaitToken reads a run's output until it names its token.
func awaitToken(t *testing.T, r io.Reader) netns.Token {
	t.Helper()
	sc := bufio.NewScanner(r)
	pattern := regexp.MustCompile(`token ([0-9a-f]{4})`)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if m := pattern.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, r)
			return netns.Token(m[1])
		}
	}
	t.Fatalf("the run named no token:\n%s", strings.Join(seen, "\n"))
	return ""
}

// TestPatternsPlaceAPodPerEndpoint runs two servers and three clients
// (n_to_m) on one node, pod to pod and through a Service each, as a TCP
// stream and as udp_max_rate's search: every endpoint is a pod of its
// own, client i talking to server i mod 2 (the second through the second
// Service), all three clients measure (the throughput is three times the
// mean per client, which the engines' per-client results make), hairpin
// (one pod) is skipped saying why, and the run leaves nothing.
func TestPatternsPlaceAPodPerEndpoint(t *testing.T) {
	c := requireLab(t)
	t.Parallel() // its numbers need only be there: it runs beside the other runs that hold theirs loosely
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, out := runOnLab(ctx, t, c, "--modes", "k8s:pod,k8s:service,k8s:hairpin", "--topologies", "chc", "--workloads", "tcp_stream,udp_max_rate",
		"--pattern", "n_to_m", "--servers", "2", "--clients", "3", "--samples", "1", "--duration", "500ms", "--warmup", "200ms")
	if len(res.Cases) != 6 {
		t.Fatalf("%d cases, want three modes, each with two workloads:\n%s", len(res.Cases), out)
	}
	for _, cs := range res.Cases {
		if cs.Mode == "k8s:hairpin" {
			if cs.Status != model.StatusSkipped || !strings.Contains(cs.Reason, "one server, not 2") {
				t.Errorf("%s: %s (%s), want skipped: hairpin is one pod", cs.Key, cs.Status, cs.Reason)
			}
			continue
		}
		checkCase(t, cs)
		for _, s := range cs.Samples {
			total, each := s.Values[model.ThroughputBPS], s.Values[model.ThroughputPerEndpointBPS]
			if each <= 0 || math.Abs(total/each-3) > 1e-6 {
				t.Errorf("%s: %.4g bit/s over %.4g per client: want three clients' results", cs.Key, total, each)
			}
		}
	}
	checkNothingLeft(ctx, t, c, out)
}

// checkDescription holds a case's mode_config to what the lab runs: its
// version, its nodes' kernel (this machine's) and runtime, kube-proxy's
// mode from its ConfigMap, and no CNI DaemonSet (the lab's ptp plugin is
// a file on each node).
func checkDescription(t *testing.T, cs model.CaseResult) {
	t.Helper()
	var d Description
	if err := json.Unmarshal([]byte(cs.Params.ModeConfig), &d); err != nil {
		t.Errorf("%s: mode_config %q: %v", cs.Key, cs.Params.ModeConfig, err)
		return
	}
	var uts unix.Utsname
	unix.Uname(&uts)
	kernel := unix.ByteSliceToString(uts.Release[:])
	nodes := map[string]bool{cs.Params.ServerNode: true, cs.Params.ClientNode: true}
	if !strings.HasPrefix(d.Version, "v1.31.") || d.KubeProxyMode != "iptables" || !strings.HasPrefix(d.CNI, "unknown: none of") || len(d.Nodes) != len(nodes) {
		t.Errorf("%s: the cluster recorded as %+v; want v1.31.*, iptables, no CNI DaemonSet, nodes %v", cs.Key, d, nodes)
	}
	for _, n := range d.Nodes {
		if !nodes[n.Name] || n.Kernel != kernel || !strings.HasPrefix(n.ContainerRuntime, "containerd://") || !strings.HasPrefix(n.Kubelet, "v1.31.") {
			t.Errorf("%s: node recorded as %+v; want one of %v on kernel %s, containerd and kubelet v1.31", cs.Key, n, nodes, kernel)
		}
	}
}
