package kubelab_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"cnbench/internal/cpu"
	"cnbench/internal/image"
	"cnbench/internal/kubelab"
	"cnbench/internal/netns"
	"cnbench/internal/testutil"
)

// hostSysctls are the machine-wide settings kubelet and kube-proxy would
// change on a node of their own; the lab must leave them as they are.
var hostSysctls = []string{
	"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
	"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes", "net.netfilter.nf_conntrack_max",
	"net.netfilter.nf_conntrack_tcp_timeout_established", "net.netfilter.nf_conntrack_tcp_timeout_close_wait",
}

func readSysctls(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range hostSysctls {
		v, err := os.ReadFile(filepath.Join("/proc/sys", strings.ReplaceAll(k, ".", "/")))
		if err != nil {
			continue
		}
		out[k] = strings.TrimSpace(string(v))
	}
	if _, ok := out["vm.overcommit_memory"]; !ok {
		t.Fatal("cannot read vm.overcommit_memory")
	}
	return out
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// The test's Services, with fixed ClusterIPs so that the pods' commands
// can name them.
var (
	serverIP  = "198.18.232.10"
	hairpinIP = "198.18.232.11"
)

const testImage = "cnbench.invalid/kubelab-test:1"

// TestClusterRunsPodsAndServices brings up a two-node cluster on each
// pod network the lab runs, runs an HTTP server pod on the first node
// behind a ClusterIP Service and client pods whose own commands fetch its
// page: from the other node by the pod's address and by the Service's,
// from the same node by the pod's and by the Service's, and a pod that
// fetches its own page through its own Service (hairpin). Each client
// exits 0 only if it got the page. Stopping the cluster must leave no
// namespace, process or cgroup behind and the machine's sysctls as they
// were.
func TestClusterRunsPodsAndServices(t *testing.T) {
	testutil.RequireRoot(t)
	bin, err := kubelab.Binaries()
	if err != nil {
		t.Skip("skipped: " + err.Error())
	}
	if m := kubelab.Missing(); len(m) > 0 {
		t.Skipf("skipped: this machine lacks %v", m)
	}
	for _, cni := range kubelab.CNIs {
		t.Run(cni, func(t *testing.T) {
			t.Parallel() // a lab of each CNI at once: each is its own namespaces, cgroups and files
			if cni == kubelab.CNIFlannel {
				if _, err := kubelab.FlannelBinaries(); err != nil {
					t.Skip("skipped: " + err.Error())
				}
			}
			testClusterRunsPodsAndServices(t, bin, cni)
		})
	}
}

func testClusterRunsPodsAndServices(t *testing.T, bin, cni string) {
	before := readSysctls(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tok := netns.NewToken()
	start := time.Now()
	c, err := kubelab.Start(ctx, kubelab.Config{Bin: bin, Token: tok, Log: logWriter{t}, CNI: cni})
	if err != nil {
		t.Fatal(err)
	}
	if c.CNI != cni {
		t.Errorf("the lab runs CNI %q, asked %q", c.CNI, cni)
	}
	t.Logf("Start took %v", time.Since(start).Round(time.Millisecond))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop()
		}
	})

	checkKubeconfig(t, c)
	checkNetworking(ctx, t, c, tok)
	checkPodNetwork(t, c)

	procs := c.Processes()
	start = time.Now()
	if err := c.Stop(); err != nil {
		t.Error(err)
	}
	stopped = true
	t.Logf("Stop took %v", time.Since(start).Round(time.Millisecond))
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	checkNothingLeft(t, tok, procs)
	after := readSysctls(t)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("sysctl %s was %s before the cluster and is %s after", k, v, after[k])
		}
	}
}

// TestFailedStartLeavesNothing starts a cluster whose Kubernetes
// binaries are missing: the API server cannot start, and Start must
// say so and remove what it made before, etcd and containerds included.
func TestFailedStartLeavesNothing(t *testing.T) {
	testutil.RequireRoot(t)
	if m := kubelab.Missing(); len(m) > 0 {
		t.Skipf("skipped: this machine lacks %v", m)
	}
	tok := netns.NewToken()
	c, err := kubelab.Start(context.Background(), kubelab.Config{Bin: t.TempDir(), Token: tok, Log: logWriter{t}})
	if err == nil {
		_ = c.Stop()
		t.Fatal("Start succeeded without the Kubernetes binaries")
	}
	t.Logf("Start failed as it should: %v", err)
	if !strings.Contains(err.Error(), "kube-apiserver") {
		t.Errorf("Start failed with %q, which does not name the API server", err)
	}
	checkNothingLeft(t, tok, nil)
}

// checkKubeconfig runs a client inside the control plane's namespace,
// as cnbench would run there, that reads the cluster from the
// kubeconfig file alone: this test's binary, as TestHelperListNodes.
func checkKubeconfig(t *testing.T, c *kubelab.Cluster) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperListNodes$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"="+c.Kubeconfig)
	var out []byte
	err := netns.DoAt(c.ControlPlane, func() error {
		var err error
		out, err = cmd.CombinedOutput()
		return err
	})
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("nodes: %d", len(c.Nodes))) {
		t.Errorf("a client in the control plane's namespace with %s: %v\n%s", c.Kubeconfig, err, out)
	}
}

const helperEnv = "KUBELAB_HELPER_KUBECONFIG"

// TestHelperListNodes is the client of checkKubeconfig.
func TestHelperListNodes(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("skipped: runs only as TestClusterRunsPodsAndServices's client")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("nodes: %d\n", len(nodes.Items))
}

// checkNetworking runs the server and the client pods and checks each
// client's exit and output.
func checkNetworking(ctx context.Context, t *testing.T, c *kubelab.Cluster, tok netns.Token) {
	if err := c.Load(ctx, image.Spec{Binary: "/bin/busybox", Tools: []string{"busybox"}}, testImage); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(c.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	page := "kubelab-" + string(tok)
	n1, n2 := c.Nodes[0].Name, c.Nodes[1].Name
	serve := fmt.Sprintf("echo %s >/tmp/index.html; ", page)
	create(ctx, t, cs, pod("server", n1, "app=server", serve+"exec busybox httpd -f -p 8080 -h /tmp"))
	create(ctx, t, cs, service("server", serverIP, "server"))
	create(ctx, t, cs, service("hairpin", hairpinIP, "hairpin"))
	server := waitPod(ctx, t, cs, "server", corev1.PodRunning)
	if !c.Nodes[0].PodCIDR.Contains(mustAddr(t, server.Status.PodIP)) {
		t.Errorf("server pod has address %s, outside %s's pod CIDR %s", server.Status.PodIP, n1, c.Nodes[0].PodCIDR)
	}
	clients := map[string]string{
		"pod-across":     n2 + " " + fetch(server.Status.PodIP+":8080"),
		"service-across": n2 + " " + fetch(serverIP),
		"service-same":   n1 + " " + fetch(serverIP),
		"pod-same":       n1 + " " + fetch(server.Status.PodIP+":8080"),
		"hairpin":        n1 + " " + serve + "busybox httpd -p 8080 -h /tmp; " + fetch(hairpinIP),
	}
	for name, spec := range clients {
		node, cmd, _ := strings.Cut(spec, " ")
		create(ctx, t, cs, pod(name, node, "app="+name, cmd))
	}
	for name := range clients {
		p := waitPod(ctx, t, cs, name, corev1.PodSucceeded, corev1.PodFailed)
		logs, err := cs.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Errorf("logs of %s: %v", name, err)
		}
		if p.Status.Phase != corev1.PodSucceeded || !bytes.Contains(logs, []byte(page)) {
			t.Errorf("client %s on %s ended %s, logging %q; want Succeeded with %q", name, p.Spec.NodeName, p.Status.Phase, logs, page)
		}
	}
}

// checkPodNetwork checks that the pods' links are the CNI's: on the
// bridge and on flannel, the server pod's veth is a port of the first
// node's bridge, and flannel has its VXLAN link; on ptp, there is no
// bridge and a pod's veth holds the pod CIDR's gateway address.
func checkPodNetwork(t *testing.T, c *kubelab.Cluster) {
	ns, err := vnetns.GetFromPath(c.Nodes[0].Namespace)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	bridges, ports := map[int]string{}, map[int]int{}
	vethsWithGateway := 0
	var vxlans []string
	gw := c.Nodes[0].PodCIDR.Addr().Next()
	for _, l := range links {
		if l.Type() == "bridge" {
			bridges[l.Attrs().Index] = l.Attrs().Name
		}
		if l.Type() == "vxlan" {
			vxlans = append(vxlans, l.Attrs().Name)
		}
		if l.Type() != "veth" {
			continue
		}
		ports[l.Attrs().MasterIndex]++
		addrs, _ := h.AddrList(l, netlink.FAMILY_V4)
		for _, a := range addrs {
			if a.IP.Equal(gw.AsSlice()) {
				vethsWithGateway++
			}
		}
	}
	if (c.CNI == kubelab.CNIFlannel) != (len(vxlans) == 1) {
		t.Errorf("node 1 runs CNI %s and has VXLAN links %v; want flannel's one with flannel, none without", c.CNI, vxlans)
	}
	switch c.CNI {
	case kubelab.CNIBridge, kubelab.CNIFlannel:
		want := c.Token.Name("kcbr")
		idx := -1
		for i, name := range bridges {
			if name == want {
				idx = i
			}
		}
		// The server at least: the clients that ended may have lost
		// their sandboxes already.
		if idx < 0 || ports[idx] < 1 {
			t.Errorf("node 1 has bridges %v with %v ports; want %s with the server pod's veth", bridges, ports, want)
		}
	case kubelab.CNIPtp:
		if len(bridges) > 0 || vethsWithGateway < 1 {
			t.Errorf("node 1 has bridges %v and %d veths with the gateway %s; want no bridge and a veth per pod", bridges, vethsWithGateway, gw)
		}
	}
}

// fetch is a shell command that fetches the page at addr, retrying
// while kube-proxy may not have the Service's rules yet, and exits
// non-zero if it never gets it.
func fetch(addr string) string {
	return fmt.Sprintf("for i in $(busybox seq 20); do busybox timeout 2 busybox wget -q -O - http://%s/ && exit 0; busybox sleep 0.25; done; exit 1", addr)
}

func pod(name, node, label, script string) *corev1.Pod {
	k, v, _ := strings.Cut(label, "=")
	zero := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{k: v}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "main", Image: testImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/usr/bin/busybox", "sh", "-c", script},
			}},
		},
	}
}

func service(name, ip, app string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			ClusterIP: ip,
			Selector:  map[string]string{"app": app},
			Ports:     []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

func create(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, obj any) {
	t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.Pod:
		_, err = cs.CoreV1().Pods("default").Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Service:
		_, err = cs.CoreV1().Services("default").Create(ctx, o, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// waitPod waits until the pod is in one of the phases.
func waitPod(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, name string, phases ...corev1.PodPhase) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ph := range phases {
			if p.Status.Phase == ph {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s is %s, not %v, after 60s: %+v", name, p.Status.Phase, phases, p.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkNothingLeft asserts that the cluster's namespaces, processes,
// cgroups and directory are gone.
func checkNothingLeft(t *testing.T, tok netns.Token, procs []int) {
	names, err := netns.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if netns.TokenOf(n) == tok {
			t.Errorf("namespace %s is left", n)
		}
	}
	if procs != nil && len(procs) < 9 {
		t.Errorf("the cluster listed %d processes; it runs at least 4 control-plane daemons and 3 per node", len(procs))
	}
	for _, pid := range procs {
		if syscall.Kill(pid, 0) == nil && !isZombie(pid) {
			t.Errorf("process %d (%s) of the cluster is alive", pid, netns.Comm(pid))
		}
	}
	mounts, err := cpu.CgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if _, err := os.Stat(filepath.Join(m.Point, tok.Name("k8s"))); err == nil {
			t.Errorf("cgroup %s is left in %s", tok.Name("k8s"), m.Point)
		}
	}
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), tok.Name("k8s")+"*"))
	for _, d := range left {
		t.Errorf("directory %s is left", d)
	}
}

func isZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && strings.HasPrefix(s[i+1:], " Z")
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatalf("pod address %q: %v", s, err)
	}
	return a
}
