// Package kubelab brings up a real Kubernetes cluster on this machine,
// entirely inside network namespaces cnbench names, for tests of the
// Kubernetes driver, and removes it again leaving nothing behind.
//
// The control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler) shares one namespace; each node is a namespace of its
// own, with its own containerd, kubelet and kube-proxy; each is cabled by
// a veth to a bridge in a switch's namespace. Pods get their addresses from the
// node's pod CIDR through Debian's CNI plugins (a bridge per node, or a
// routed veth per pod), and static routes join the nodes' pod CIDRs, so
// no overlay and no controller of the pod network is needed.
//
// Nothing reaches the machine outside those namespaces. Each node's
// processes share a private mount namespace where the paths kubelet,
// containerd and the CNI plugins hard-code whatever their flags say
// (/var/lib/kubelet/device-plugins, /var/log/containers, /var/lib/cni,
// /run/containerd/s) lie on overlays whose upper layers are in the node's
// directory, and where the host-wide sysctls kubelet insists on read as
// the values it wants while the machine's stay as they are. Cgroups are
// made under cnb-TOKEN-k8s in every hierarchy. Stop ends every process by
// its PID and removes namespaces, cgroups and directories.
package kubelab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"cnbench/internal/cleanup"
	"cnbench/internal/daemon"
	"cnbench/internal/netns"
)

// Version is the Kubernetes release the lab runs.
const Version = "v1.31.13"

// BinEnv names the environment variable that overrides where the
// Kubernetes binaries are.
const BinEnv = "CNBENCH_KUBE_BIN"

// DefaultBin is where scripts/build-kubernetes.sh puts the binaries.
const DefaultBin = "/var/cache/cnbench/kubernetes/" + Version + "/bin"

// Components are the Kubernetes binaries the lab runs.
var Components = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"}

// Programs are what the lab needs from the machine besides Kubernetes.
var Programs = []string{"etcd", "containerd", "containerd-shim-runc-v2", "runc", "ctr", "nsenter", "iptables", "mount", "sh"}

// CNIDir is where the CNI plugins the nodes use are installed, and
// CNIPlugins those plugins.
const CNIDir = "/usr/lib/cni"

var CNIPlugins = []string{"bridge", "ptp", "host-local", "loopback", "portmap"}

// The pod networks a lab can run.
const (
	// CNIBridge puts a node's pods on a bridge (the bridge plugin) with
	// static routes between the nodes' pod CIDRs: what most
	// hand-built clusters and kubenet run.
	CNIBridge = "bridge"
	// CNIPtp gives each pod a routed veth to its node (the ptp plugin),
	// with the same routes between nodes.
	CNIPtp = "ptp"
	// CNIFlannel runs flanneld on each node with its VXLAN backend: pods
	// on a bridge per node, as with CNIBridge, and between nodes an
	// overlay flanneld keeps from the Node objects, in place of the
	// static routes.
	CNIFlannel = "flannel"
)

// CNIs lists the pod networks, the default first.
var CNIs = []string{CNIBridge, CNIPtp, CNIFlannel}

// FlannelVersion is the flannel release CNIFlannel runs; FlannelBinEnv
// overrides where its binaries (flanneld, and its CNI plugin flannel)
// are, DefaultFlannelBin where scripts/build-flannel.sh puts them.
const (
	FlannelVersion    = "v0.28.4"
	FlannelBinEnv     = "CNBENCH_FLANNEL_BIN"
	DefaultFlannelBin = "/var/cache/cnbench/flannel/" + FlannelVersion + "/bin"
)

// FlannelBinaries returns the directory holding flanneld and flannel's
// CNI plugin: $FlannelBinEnv, else DefaultFlannelBin.
func FlannelBinaries() (string, error) {
	dir := os.Getenv(FlannelBinEnv)
	if dir == "" {
		dir = DefaultFlannelBin
	}
	for _, b := range []string{"flanneld", "flannel"} {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("flannel %s's %s is not in %s (set %s to where it is, or build it: bash scripts/build-flannel.sh)",
				FlannelVersion, b, dir, FlannelBinEnv)
		}
	}
	return dir, nil
}

// Binaries returns the directory holding the Kubernetes binaries: $BinEnv,
// else DefaultBin.
func Binaries() (string, error) {
	dir := os.Getenv(BinEnv)
	if dir == "" {
		dir = DefaultBin
	}
	var missing []string
	for _, c := range Components {
		if st, err := os.Stat(filepath.Join(dir, c)); err != nil || st.Mode()&0o111 == 0 {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("kubernetes %s binaries %v are not in %s (set %s to where they are, or build them: bash scripts/build-kubernetes.sh)",
			Version, missing, dir, BinEnv)
	}
	return dir, nil
}

// Missing lists what of Programs and CNIPlugins this machine lacks.
func Missing() []string {
	var out []string
	for _, p := range Programs {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := exec.LookPath(filepath.Join("/usr/sbin", p)); err != nil {
				out = append(out, p)
			}
		}
	}
	for _, p := range CNIPlugins {
		if _, err := os.Stat(filepath.Join(CNIDir, p)); err != nil {
			out = append(out, filepath.Join(CNIDir, p))
		}
	}
	return out
}

// Config shapes a lab cluster.
type Config struct {
	// Nodes is how many worker nodes; 0 means 2.
	Nodes int
	// Bin holds the Kubernetes binaries; empty means Binaries().
	Bin string
	// Token names everything the lab makes; empty means a new one.
	Token netns.Token
	// Log, when set, is told of the lab's progress.
	Log io.Writer
	// CNI is the pod network, one of CNIs; empty means CNIBridge.
	CNI string
	// FlannelBin holds flannel's binaries, for CNIFlannel; empty means
	// FlannelBinaries().
	FlannelBin string
}

// Resolve fills in the defaults cfg leaves (nodes, CNI, where the
// binaries are) and says what of it this machine lacks, so that a caller
// can refuse before it starts anything; Start resolves its cfg so.
func (cfg Config) Resolve() (Config, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 2
	}
	if cfg.Nodes < 1 || cfg.Nodes > MaxNodes {
		return cfg, fmt.Errorf("kubelab: %d nodes; a lab has 1 to %d", cfg.Nodes, MaxNodes)
	}
	if cfg.CNI == "" {
		cfg.CNI = CNIBridge
	}
	if !slices.Contains(CNIs, cfg.CNI) {
		return cfg, fmt.Errorf("kubelab: unknown CNI %q; a lab runs one of %s", cfg.CNI, strings.Join(CNIs, ", "))
	}
	var err error
	if cfg.CNI == CNIFlannel && cfg.FlannelBin == "" {
		if cfg.FlannelBin, err = FlannelBinaries(); err != nil {
			return cfg, err
		}
	}
	if cfg.Bin == "" {
		if cfg.Bin, err = Binaries(); err != nil {
			return cfg, err
		}
	}
	if m := Missing(); len(m) > 0 {
		return cfg, fmt.Errorf("kubelab: this machine lacks %s (bash scripts/setup.sh installs them)", strings.Join(m, ", "))
	}
	return cfg, nil
}

// Node is one worker node of a lab cluster.
type Node struct {
	// Name is the Kubernetes node name, also its namespace's name.
	Name string
	// Namespace is the node's network namespace (netns.RunDir/NAME).
	Namespace string
	// Addr is the node's InternalIP, PodCIDR where its pods are numbered.
	Addr    netip.Addr
	PodCIDR netip.Prefix
	// ContainerdSocket is the node's own containerd.
	ContainerdSocket string
	// NIC is the node's link to the others, in its namespace: what
	// crosses between nodes, its counters count.
	NIC string

	ns      *netns.NS
	dir     string
	procs   []*daemon.Process // containerd, kubelet, kube-proxy (, flanneld)
	sysctls []string          // host-wide sysctls kubelet wants other than they are
}

// Cluster is a running lab cluster.
type Cluster struct {
	// Kubeconfig is an admin kubeconfig file, valid for programs run
	// inside the control plane's namespace.
	Kubeconfig string
	// LimitedKubeconfigs are LimitedUsers' kubeconfigs, in their order,
	// valid where Kubeconfig is.
	LimitedKubeconfigs []string
	// ControlPlane is the control plane's network namespace path.
	ControlPlane string
	// APIServer is the API server's address in the control plane's
	// namespace; Dial reaches it from anywhere.
	APIServer netip.AddrPort
	Nodes     []Node
	// Token is the run token everything of the lab is named with.
	Token netns.Token
	// CNI is the pod network the nodes run, one of CNIs.
	CNI string

	cfg       Config
	dir       string
	cp        *netns.NS
	sw        *netns.NS         // the switch the nodes and the control plane are cabled to
	cpProcs   []*daemon.Process // etcd, apiserver, controller-manager, scheduler
	pki       *pki
	client    *kubernetes.Clientset
	claimed   bool
	exposed   []net.Listener // Expose's, closed first on Stop
	stopOnce  sync.Once
	stopErr   error
	startedAt time.Time
}

// LimitedUsers are users of the lab's API server in no group: the lab
// authorizes by RBAC, as clusters do, and grants them nothing, so that a
// test finds out what cnbench does with what a role it binds allows and
// refuses. There are two, so that two such tests run side by side
// without one's binding lending the other's user its rights.
var LimitedUsers = []string{"cnbench-limited", "cnbench-limited-2"}

// MaxNodes bounds the nodes of a lab: each numbers its pods in one /24 of
// the cluster's pod CIDR.
const MaxNodes = 30

// Start brings up a cluster of cfg.Nodes nodes and returns once every
// node is Ready and pods can be created in namespace default. On error it
// removes everything it made.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if cfg, err = cfg.Resolve(); err != nil {
		return nil, err
	}
	if cfg.Token == "" {
		cfg.Token = netns.NewToken()
	}
	// The claim tells `cnbench cleanup` the lab is alive: without one its
	// sweep took the lab for a dead run's leftovers and ended it.
	if err := cleanup.Claim(cfg.Token); err != nil {
		return nil, fmt.Errorf("kubelab: %w", err)
	}
	c := &Cluster{cfg: cfg, Token: cfg.Token, CNI: cfg.CNI, startedAt: time.Now(), APIServer: netip.AddrPortFrom(ControlPlaneAddr, APIPort), claimed: true}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
		}
	}()
	if c.dir, err = os.MkdirTemp("", cfg.Token.Name("k8s")+"-"); err != nil {
		return nil, fmt.Errorf("kubelab directory: %w", err)
	}
	for _, p := range hiddenParents {
		if strings.HasPrefix(c.dir, p+"/") {
			return nil, fmt.Errorf("kubelab: the temporary directory %s lies under %s, which the nodes overlay; set TMPDIR elsewhere", c.dir, p)
		}
	}
	if err := c.prepare(); err != nil {
		return nil, err
	}
	if err := c.startEtcdAndAPIServer(); err != nil {
		return nil, err
	}
	if err := c.startContainerds(ctx); err != nil {
		return nil, err
	}
	if err := c.waitAPIServer(ctx); err != nil {
		return nil, err
	}
	c.logf("API server answers")
	if err := c.startControllers(); err != nil {
		return nil, err
	}
	if err := c.startNodes(ctx); err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	c.logf("%d nodes Ready", len(c.Nodes))
	return c, nil
}

// prepare makes what the processes need before any starts: keys and
// certificates, configuration files, namespaces and links, cgroups.
func (c *Cluster) prepare() error {
	var err error
	if c.pki, err = newPKI(filepath.Join(c.dir, "pki")); err != nil {
		return err
	}
	for i := 1; i <= c.cfg.Nodes; i++ {
		name := c.Token.Name(fmt.Sprintf("k8sn%d", i))
		c.Nodes = append(c.Nodes, Node{Name: name, Namespace: filepath.Join(netns.RunDir, name),
			Addr: NodeAddr(i), PodCIDR: PodCIDR(i), dir: filepath.Join(c.dir, name)})
	}
	if err := c.pki.writeTokens(c.Nodes); err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.dir, "admin.kubeconfig")
	for i, user := range LimitedUsers {
		kc := filepath.Join(c.dir, user+".kubeconfig")
		if err := c.pki.writeKubeconfig(kc, c.APIServer, c.pki.userTokens[i]); err != nil {
			return err
		}
		c.LimitedKubeconfigs = append(c.LimitedKubeconfigs, kc)
	}
	if err := c.pki.writeKubeconfig(c.Kubeconfig, c.APIServer, c.pki.adminToken); err != nil {
		return err
	}
	if err := c.buildNetwork(); err != nil {
		return err
	}
	if err := c.makeCgroups(); err != nil {
		return err
	}
	for i := range c.Nodes {
		if err := c.writeNodeFiles(&c.Nodes[i]); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) logf(format string, args ...any) {
	if c.cfg.Log != nil {
		fmt.Fprintf(c.cfg.Log, "kubelab %s: %5.1fs %s\n", c.Token, time.Since(c.startedAt).Seconds(), fmt.Sprintf(format, args...))
	}
}

// Stop ends every process of the cluster by its PID (SIGTERM, then
// SIGKILL after a grace period) and removes the cgroups, namespaces and
// directories. Calling it again returns the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

// stop tears down in the reverse order of need: kube-proxy and kubelet
// first, so that nothing restarts a container, then the containers through
// their cgroups while their shims still reap them, the shims and
// anything else left in the nodes' namespaces, the control plane, and
// last the namespaces and files.
func (c *Cluster) stop() error {
	start := time.Now()
	var errs []error
	for _, ln := range c.exposed {
		ln.Close()
	}
	var nodeNames []string
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if len(n.procs) > 1 {
			errs = append(errs, daemon.StopAll(n.procs[1:], 5*time.Second))
		}
		nodeNames = append(nodeNames, n.Name)
	}
	errs = append(errs, removeCgroups(c.Token))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if len(n.procs) > 0 {
			errs = append(errs, n.procs[0].Stop(5*time.Second))
		}
		n.procs = nil
	}
	netns.EndOccupants(nodeNames, 5*time.Second)
	errs = append(errs, daemon.StopAll(c.cpProcs, 5*time.Second))
	c.cpProcs = nil
	if c.cp != nil {
		netns.EndOccupants([]string{c.cp.Name}, 5*time.Second)
	}
	errs = append(errs, c.removeNetwork())
	if c.dir != "" {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", c.dir, err))
		}
	}
	if c.claimed {
		errs = append(errs, cleanup.Release(c.Token))
	}
	c.logf("stopped in %.1fs", time.Since(start).Seconds())
	return errors.Join(errs...)
}

// Processes lists the PIDs of every process the cluster runs: its
// daemons, what they started in the nodes' namespaces (containerd's
// shims) and the containers in the cluster's cgroups.
func (c *Cluster) Processes() []int {
	seen := map[int]bool{}
	var names []string
	for _, p := range c.cpProcs {
		seen[p.Cmd.Process.Pid] = true
	}
	for _, n := range c.Nodes {
		for _, p := range n.procs {
			seen[p.Cmd.Process.Pid] = true
		}
		names = append(names, n.Name)
	}
	for pid := range netns.Occupants(names) {
		seen[pid] = true
	}
	for _, pid := range cgroupPIDs(c.Token) {
		seen[pid] = true
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	return out
}

// sbinPath is PATH with the system directories a user's PATH often lacks
// and the daemons find their helpers (runc, iptables) in.
func sbinPath() string {
	return "PATH=" + os.Getenv("PATH") + ":/usr/local/sbin:/usr/sbin:/sbin"
}
