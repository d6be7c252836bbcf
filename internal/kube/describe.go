package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Description is what a case records of the cluster it ran on, as its
// mode_config: the same paths on another version, kernel, runtime, CNI or
// kube-proxy mode are not the same measurement.
type Description struct {
	Version string     `json:"version"`
	Nodes   []NodeInfo `json:"nodes"`
	// KubeProxyMode is kube-proxy's mode (iptables, ipvs, nftables) as
	// its ConfigMap in kube-system gives it, or why it is unknown.
	KubeProxyMode string `json:"kube_proxy_mode"`
	// CNI names the DaemonSets of a known CNI and their images, or says
	// none was found (a static configuration on the nodes, for one).
	CNI string `json:"cni"`
}

// NodeInfo is what a node's kubelet reports of it.
type NodeInfo struct {
	Name             string `json:"name"`
	Kernel           string `json:"kernel"`
	OSImage          string `json:"os_image"`
	ContainerRuntime string `json:"container_runtime"`
	Kubelet          string `json:"kubelet"`
	// CNI is the pod network the node's annotations name, where its agent
	// writes some (flannel, Calico, Cilium), however it was deployed.
	CNI string `json:"cni,omitempty"`
}

// cniAnnotations are annotations a CNI's agent writes on its node, and
// the CNI they name; the value, where it says more, is recorded too.
var cniAnnotations = []struct{ key, cni string }{
	{"flannel.alpha.coreos.com/backend-type", "flannel, backend"},
	{"projectcalico.org/IPv4Address", "calico, node address"},
	{"network.cilium.io/ipv4-cilium-host", "cilium, host address"},
	{"io.cilium.network.ipv4-cilium-host", "cilium, host address"},
}

// nodeCNI names the CNI a node's annotations show, or "".
func nodeCNI(annotations map[string]string) string {
	for _, a := range cniAnnotations {
		if v, ok := annotations[a.key]; ok {
			return fmt.Sprintf("%s %s (node annotation %s)", a.cni, v, a.key)
		}
	}
	return ""
}

// Describe says what the named nodes and the cluster run, as JSON. What
// cannot be read (RBAC, a missing object) is recorded with the reason
// instead of failing the case. What is the whole cluster's is read once
// per run: listing every DaemonSet of a large cluster for each case
// would cost it and the API server for nothing.
func (c *Cluster) Describe(ctx context.Context, nodes []string) string {
	c.about.once.Do(func() {
		c.about.d = Description{Version: "unknown", KubeProxyMode: c.kubeProxyMode(ctx), CNI: c.cni(ctx)}
		if v, err := c.cs.Discovery().ServerVersion(); err == nil {
			c.about.d.Version = v.GitVersion
		}
	})
	d := c.about.d
	for _, name := range nodes {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			d.Nodes = append(d.Nodes, NodeInfo{Name: name, Kernel: "unknown: " + err.Error()})
			continue
		}
		i := n.Status.NodeInfo
		d.Nodes = append(d.Nodes, NodeInfo{Name: name, Kernel: i.KernelVersion, OSImage: i.OSImage,
			ContainerRuntime: i.ContainerRuntimeVersion, Kubelet: i.KubeletVersion, CNI: nodeCNI(n.Annotations)})
	}
	data, _ := json.Marshal(d)
	return string(data)
}

// proxyModeLine finds the mode in kube-proxy's configuration file.
var proxyModeLine = regexp.MustCompile(`(?m)^mode:\s*"?([a-z]*)"?\s*$`)

// kubeProxyMode reads the mode from the kube-system/kube-proxy ConfigMap,
// which kubeadm and most installers write; an empty mode is kube-proxy's
// default on Linux, iptables.
//
// Equivalent to: kubectl -n kube-system get configmap kube-proxy -o jsonpath='{.data.config\.conf}' | grep ^mode
func (c *Cluster) kubeProxyMode(ctx context.Context) string {
	cm, err := c.cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "unknown: no ConfigMap kube-system/kube-proxy"
	}
	if err != nil {
		return "unknown: " + err.Error()
	}
	for _, conf := range cm.Data {
		if m := proxyModeLine.FindStringSubmatch(conf); m != nil {
			if m[1] == "" {
				return "iptables (the default)"
			}
			return m[1]
		}
	}
	return "iptables (the default)"
}

// knownCNIs are names CNI DaemonSets carry.
var knownCNIs = []string{"calico", "cilium", "flannel", "weave", "antrea", "canal", "kube-router", "kindnet",
	"aws-node", "azure-cns", "ovn", "multus", "kube-ovn", "romana", "contiv"}

// cni names the DaemonSets of a known CNI, with their images, which carry
// their versions.
//
// Equivalent to: kubectl get daemonsets -A -o wide | grep -E 'calico|cilium|flannel|...'
func (c *Cluster) cni(ctx context.Context) string {
	list, err := c.cs.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "unknown: " + err.Error()
	}
	var found []string
	for _, ds := range list.Items {
		for _, known := range knownCNIs {
			if !strings.Contains(ds.Name, known) {
				continue
			}
			var images []string
			for _, ct := range ds.Spec.Template.Spec.Containers {
				images = append(images, ct.Image)
			}
			found = append(found, fmt.Sprintf("%s/%s (%s)", ds.Namespace, ds.Name, strings.Join(images, ", ")))
			break
		}
	}
	if len(found) == 0 {
		return fmt.Sprintf("unknown: none of %d DaemonSets is a known CNI's (a configuration the nodes hold themselves?)", len(list.Items))
	}
	return strings.Join(found, "; ")
}
