package kubelab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cnbench/internal/daemon"
	"cnbench/internal/image"
)

// PauseImage is the image of the pods' sandboxes, which no registry
// holds: each node's containerd is given it at start.
const PauseImage = "cnbench.invalid/kubelab-pause:1"

// hiddenParents are the directories under which kubelet, containerd and
// the CNI plugins make paths of their own whatever their flags say
// (/var/lib/kubelet/device-plugins, /var/log/containers, /var/lib/cni,
// /run/containerd/s). A node's private mount namespace lays an overlay on
// each, whose upper layer is in the node's directory: the machine's files
// stay visible, and nothing written there reaches them.
var hiddenParents = []string{"/var/lib", "/var/log", "/run"}

// kernelTunables are the host-wide sysctls kubelet requires, with the
// values it requires: with protectKernelDefaults it refuses to start
// rather than set them, and a node's mount namespace shows it these
// values over the real ones.
var kernelTunables = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

func (n *Node) path(elem ...string) string { return filepath.Join(append([]string{n.dir}, elem...)...) }

// writeNodeFiles writes a node's configuration: containerd's, the CNI
// network's, kubelet's and kube-proxy's, with their kubeconfigs, and the
// files that stand in for the host's sysctls.
func (c *Cluster) writeNodeFiles(n *Node) error {
	for _, d := range []string{"containerd", "net.d", "cni", "kubelet", "pods", "sysctl"} {
		if err := os.MkdirAll(n.path(d), 0o755); err != nil {
			return err
		}
	}
	for _, p := range hiddenParents {
		for _, layer := range []string{"upper", "work"} {
			if err := os.MkdirAll(n.path("overlay", strings.Trim(p, "/"), layer), 0o755); err != nil {
				return err
			}
		}
	}
	// The node's resolver is its own loopback, where nothing answers: a
	// name (an image's registry) fails at once, where the machine's
	// resolver was out of reach and made a pull wait 10 s to fail.
	if err := os.WriteFile(n.path("resolv.conf"), []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		return err
	}
	for key, want := range kernelTunables {
		have, err := os.ReadFile(filepath.Join("/proc/sys", key))
		if err != nil || strings.TrimSpace(string(have)) == want {
			continue
		}
		file := n.path("sysctl", strings.ReplaceAll(key, "/", "."))
		if err := os.WriteFile(file, []byte(want+"\n"), 0o444); err != nil {
			return err
		}
		n.sysctls = append(n.sysctls, key)
	}
	n.ContainerdSocket = n.path("containerd.sock")
	return errors.Join(
		os.WriteFile(n.path("containerd.toml"), []byte(c.containerdConfig(n)), 0o644),
		c.writeFlannelFiles(n),
		writeJSON(n.path("net.d", "10-kubelab.conflist"), c.cniConfig(n)),
		writeJSON(n.path("kubelet.json"), c.kubeletConfig(n)),
		writeJSON(n.path("proxy.json"), proxyConfig(n)),
		c.pki.writeKubeconfig(n.path("kubelet.kubeconfig"), c.APIServer, c.pki.nodeTokens[n.Name]),
		c.pki.writeKubeconfig(n.path("proxy.kubeconfig"), c.APIServer, c.pki.proxyToken),
	)
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// containerdConfig keeps every path of the node's containerd in its
// directory. The snapshotters that probe the kernel (aufs would load its
// module) are off; no container's oom_score_adj goes below containerd's
// own, as lowering it takes CAP_SYS_RESOURCE, which root may lack; pods'
// network namespaces are named under the state directory, not in
// /run/netns.
func (c *Cluster) containerdConfig(n *Node) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
    max_conf_num = 1
`, n.path("containerd", "root"), n.path("containerd", "state"), n.ContainerdSocket, n.ContainerdSocket+".ttrpc",
		n.path("containerd", "opt"), PauseImage, n.path("containerd", "runc"), c.cniBinDir(n), n.path("net.d"))
}

// cniConfig is the node's pod network. With the bridge, pods reach each
// other on the node through it and every other address through its
// gateway address; kube-proxy's rules see the bridged packets too
// (bridge-nf-call-iptables, which wireNode sets in the node's namespace),
// and a pod reaches itself through its Service by the hairpin its bridge
// port allows. With ptp each pod has a veth to the node, which routes
// between them, so the rules see every packet with no bridge in the way.
// Either way, other nodes' pods are behind the static routes.
func (c *Cluster) cniConfig(n *Node) map[string]any {
	ipam := map[string]any{
		"type":    "host-local",
		"ranges":  [][]map[string]string{{{"subnet": n.PodCIDR.String()}}},
		"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
		"dataDir": n.path("cni", "networks"),
	}
	version := "1.0.0"
	var pods map[string]any
	switch c.CNI {
	case CNIPtp:
		pods = map[string]any{"type": "ptp", "mtu": 1500, "ipMasq": false, "ipam": ipam}
	case CNIBridge:
		pods = map[string]any{"type": "bridge", "bridge": c.Token.Name("kcbr"), "isGateway": true,
			"hairpinMode": true, "mtu": 1500, "ipMasq": false, "ipam": ipam}
	case CNIFlannel:
		// flannel's plugin hands the pod to the bridge plugin, with the
		// subnet and MTU flanneld wrote to the node's subnet file and its
		// own routes; it speaks CNI 0.4 at most.
		version = "0.4.0"
		pods = map[string]any{"type": "flannel", "subnetFile": n.path("flannel-subnet.env"), "dataDir": n.path("cni", "flannel"), "delegate": map[string]any{
			"bridge": c.Token.Name("kcbr"), "isDefaultGateway": true, "hairpinMode": true, "ipMasq": false}}
	}
	return map[string]any{
		"cniVersion": version,
		"name":       "kubelab",
		"plugins": []any{
			pods,
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
}

// cniBinDir is where the node's containerd finds the CNI plugins:
// Debian's, and with flannel a directory of the node's that holds
// flannel's plugin beside links to Debian's, which it delegates to.
func (c *Cluster) cniBinDir(n *Node) string {
	if c.CNI == CNIFlannel {
		return n.path("cni-bin")
	}
	return CNIDir
}

// writeFlannelFiles writes, for flannel, its network's configuration and
// the node's CNI plugin directory.
func (c *Cluster) writeFlannelFiles(n *Node) error {
	if c.CNI != CNIFlannel {
		return nil
	}
	if err := os.MkdirAll(n.path("cni-bin"), 0o755); err != nil {
		return err
	}
	links := map[string]string{"flannel": filepath.Join(c.cfg.FlannelBin, "flannel")}
	for _, p := range CNIPlugins {
		links[p] = filepath.Join(CNIDir, p)
	}
	for name, target := range links {
		if err := os.Symlink(target, n.path("cni-bin", name)); err != nil {
			return err
		}
	}
	return writeJSON(n.path("flannel-net.json"), map[string]any{
		"Network": ClusterCIDR.String(), "SubnetLen": PodCIDRBits,
		"Backend": map[string]any{"Type": "vxlan", "VNI": 1, "Port": FlannelVXLANPort},
	})
}

// kubeletConfig: the kubelet's server lets the API server in without
// credentials (logs, exec, port-forward); image garbage collection is off
// because no image can be pulled again; eviction thresholds are low so a
// busy machine's disk does not evict the lab's pods.
func (c *Cluster) kubeletConfig(n *Node) map[string]any {
	return map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
		"address": n.Addr.String(), "port": 10250, "readOnlyPort": 0, "healthzPort": 0,
		"authentication": map[string]any{"anonymous": map[string]bool{"enabled": true},
			"webhook": map[string]bool{"enabled": false}},
		"authorization":               map[string]string{"mode": "AlwaysAllow"},
		"cgroupDriver":                "cgroupfs",
		"cgroupRoot":                  "/" + cgroupName(c.Token) + "/" + n.Name,
		"failSwapOn":                  false,
		"oomScoreAdj":                 0,
		"protectKernelDefaults":       true,
		"containerRuntimeEndpoint":    "unix://" + n.ContainerdSocket,
		"podLogsDir":                  n.path("pods"),
		"clusterDomain":               "cluster.local",
		"resolvConf":                  "/etc/resolv.conf",
		"imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
		"evictionHard": map[string]string{"memory.available": "1Mi", "nodefs.available": "1%",
			"imagefs.available": "1%", "nodefs.inodesFree": "1%"},
		"volumeStatsAggPeriod": "0s",
	}
}

// proxyMode is the lab's kube-proxy mode.
const proxyMode = "iptables"

// proxyConfig: kube-proxy's rules live in the node's namespace; the
// conntrack settings it would write (the table's size, which is the
// machine's, and the timeouts) are left as they are.
func proxyConfig(n *Node) map[string]any {
	return map[string]any{
		"apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
		"clientConnection": map[string]string{"kubeconfig": n.path("proxy.kubeconfig")},
		"hostnameOverride": n.Name,
		// The node's primary address, which kube-proxy otherwise takes
		// from the Node object once kubelet has written it there.
		"bindAddress":       n.Addr.String(),
		"nodePortAddresses": []string{"primary"},
		"clusterCIDR":       ClusterCIDR.String(),
		"mode":              proxyMode,
		"oomScoreAdj":       0,
		"conntrack": map[string]any{"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s",
			"tcpCloseWaitTimeout": "0s", "udpTimeout": "0s", "udpStreamTimeout": "0s"},
	}
}

// publishProxyConfig puts kube-proxy's mode where kubeadm's clusters keep
// kube-proxy's configuration, the kube-system/kube-proxy ConfigMap, for
// those who read it (cnbench records it with each case).
func (c *Cluster) publishProxyConfig(ctx context.Context) error {
	conf := fmt.Sprintf("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: %s\n", proxyMode)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"},
		Data: map[string]string{"config.conf": conf}}
	if _, err := c.client.CoreV1().ConfigMaps("kube-system").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kubelab: kube-proxy's ConfigMap: %w", err)
	}
	return nil
}

// mountScript prepares the node's mount namespace and becomes its
// containerd; kubelet and kube-proxy join that namespace, as they must
// see the mounts each other and containerd make (volumes, logs).
func mountScript(n *Node) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, p := range hiddenParents {
		o := n.path("overlay", strings.Trim(p, "/"))
		fmt.Fprintf(&b, "mount -t overlay kubelab -o lowerdir=%s,upperdir=%s/upper,workdir=%s/work %s\n", p, o, o, p)
	}
	for _, key := range n.sysctls {
		fmt.Fprintf(&b, "mount --bind %s /proc/sys/%s\n", n.path("sysctl", strings.ReplaceAll(key, "/", ".")), key)
	}
	fmt.Fprintf(&b, "mount --bind %s /etc/resolv.conf\n", n.path("resolv.conf"))
	fmt.Fprintf(&b, "exec containerd --config %s\n", n.path("containerd.toml"))
	return b.String()
}

// startNodeProcess forks one of a node's daemons in its namespace.
func (c *Cluster) startNodeProcess(n *Node, name string, unshare uintptr, args ...string) (*daemon.Process, error) {
	p, err := daemon.Start(daemon.Spec{
		Name: name, NS: n.ns, Token: c.Token, Record: "k8s-" + strings.TrimPrefix(n.Name, c.Token.Name("")) + "-" + name,
		Dir: c.dir, Log: n.path(name + ".log"), Args: args, Unshare: unshare,
		Env: []string{sbinPath()},
	})
	if p != nil {
		n.procs = append(n.procs, p)
	}
	return p, err
}

// startContainerds starts every node's containerd in a mount namespace
// of its own and gives it the sandbox image.
func (c *Cluster) startContainerds(ctx context.Context) error {
	pause := filepath.Join(c.dir, "pause.tar")
	if err := writePauseImage(pause); err != nil {
		return err
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		p, err := c.startNodeProcess(n, "containerd", syscall.CLONE_NEWNS, "sh", "-c", mountScript(n))
		if err != nil {
			return err
		}
		if err := p.WaitFor(n.ContainerdSocket, 30*time.Second); err != nil {
			return err
		}
	}
	for i := range c.Nodes {
		if err := image.LoadContainerd(ctx, c.Nodes[i].ContainerdSocket, "k8s.io", pause); err != nil {
			return err
		}
	}
	c.logf("containerd up on %d nodes", len(c.Nodes))
	return nil
}

// writePauseImage writes the sandbox image: sleep, which holds the pod's
// namespaces and is killed when the sandbox stops.
func writePauseImage(path string) error {
	sleep, err := findSleep()
	if err != nil {
		return err
	}
	img, err := image.Build(image.Spec{Binary: sleep})
	if err != nil {
		return fmt.Errorf("kubelab pause image: %w", err)
	}
	return image.WriteArchive(path, PauseImage, img)
}

func findSleep() (string, error) {
	for _, p := range []string{"/usr/bin/sleep", "/bin/sleep"} {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return real, nil
		}
	}
	return "", errors.New("kubelab pause image: no sleep program")
}

// startNodes registers the nodes with their pod CIDRs, which only the
// Node object can carry and which no controller then needs to allocate,
// and starts each node's kubelet and kube-proxy.
func (c *Cluster) startNodes(ctx context.Context) error {
	if err := c.publishProxyConfig(ctx); err != nil {
		return err
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		// flanneld writes its lease into the Node's annotations and
		// panics on a Node that has none yet (v0.28.4, AcquireLease),
		// which it may read before the kubelet first updates it.
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Annotations: map[string]string{"cnbench.registered-by": "kubelab"}},
			Spec: corev1.NodeSpec{PodCIDR: n.PodCIDR.String(), PodCIDRs: []string{n.PodCIDR.String()}}}
		if _, err := c.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("kubelab: register node %s: %w", n.Name, err)
		}
		mnt := "--mount=/proc/" + strconv.Itoa(n.procs[0].Cmd.Process.Pid) + "/ns/mnt"
		if _, err := c.startNodeProcess(n, "kubelet", 0, "nsenter", mnt, "--", filepath.Join(c.cfg.Bin, "kubelet"),
			"--config="+n.path("kubelet.json"), "--kubeconfig="+n.path("kubelet.kubeconfig"),
			"--hostname-override="+n.Name, "--node-ip="+n.Addr.String(),
			"--root-dir="+n.path("kubelet"), "--cert-dir="+n.path("kubelet", "pki")); err != nil {
			return err
		}
		if _, err := c.startNodeProcess(n, "kube-proxy", 0, "nsenter", mnt, "--", filepath.Join(c.cfg.Bin, "kube-proxy"),
			"--config="+n.path("proxy.json")); err != nil {
			return err
		}
		if c.CNI == CNIFlannel {
			// As flannel's DaemonSet runs it, without the masquerading of
			// traffic that leaves the cluster: none does here.
			if _, err := c.startNodeProcess(n, "flanneld", 0, "nsenter", mnt, "--", "env", "NODE_NAME="+n.Name,
				filepath.Join(c.cfg.FlannelBin, "flanneld"), "--kube-subnet-mgr", "--kubeconfig-file="+c.Kubeconfig,
				"--iface="+n.NIC, "--net-config-path="+n.path("flannel-net.json"), "--subnet-file="+n.path("flannel-subnet.env"),
				"--ip-masq=false"); err != nil {
				return err
			}
		}
	}
	if c.CNI == CNIFlannel {
		return c.waitFlannel(ctx)
	}
	return nil
}

// waitFlannel waits until flanneld has written each node's subnet file,
// which its CNI plugin needs for any pod.
func (c *Cluster) waitFlannel(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for i := range c.Nodes {
		n := &c.Nodes[i]
		for {
			if _, err := os.Stat(n.path("flannel-subnet.env")); err == nil {
				break
			}
			if err := c.checkAlive(ctx, deadline, "flanneld's subnet on "+n.Name); err != nil {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	c.logf("flannel up on %d nodes", len(c.Nodes))
	return nil
}

// waitReady waits until every node is Ready and the controller manager
// has given namespace default what a pod there needs (its service
// account and the cluster's CA).
func (c *Cluster) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(120 * time.Second)
	for {
		err := c.ready(ctx)
		if err == nil {
			return nil
		}
		if err := c.checkAlive(ctx, deadline, err.Error()); err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ready returns what the cluster still lacks, or nil.
func (c *Cluster) ready(ctx context.Context) error {
	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	ready := 0
	for _, n := range nodes.Items {
		if nodeReady(&n) {
			ready++
		}
	}
	if ready < len(c.Nodes) {
		return fmt.Errorf("nodes to be Ready (%d of %d are)", ready, len(c.Nodes))
	}
	if _, err := c.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("service account default: %w", err)
	}
	if _, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("config map kube-root-ca.crt: %w", err)
	}
	return nil
}

// nodeReady reports whether a node is Ready and the controller manager
// has lifted the taints that keep the scheduler off a node that is not.
func nodeReady(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
