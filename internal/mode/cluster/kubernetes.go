package cluster

import (
	"net/netip"

	"cnbench/internal/mode"
	"cnbench/internal/topo"
)

// Kubernetes modes put endpoints in pods on an existing cluster's nodes,
// named by the scenario's kubernetes section or `run --kubeconfig`. chc
// puts both pods on one node, chhc on two; each mode is one of the paths
// a cluster's traffic takes.
const (
	KubeHostNetwork = "k8s:hostnetwork" // hostNetwork pods: the nodes' own network, the baseline
	KubePod         = "k8s:pod"         // pod to pod IP, over whatever CNI the cluster runs
	KubeService     = "k8s:service"     // the client dials a ClusterIP Service: kube-proxy's (or its replacement's) path
	KubeNodePort    = "k8s:nodeport"    // the client dials the server's node at a NodePort
	KubeHairpin     = "k8s:hairpin"     // one pod reaches itself through its own ClusterIP Service
)

// KubePrefix starts the name of every Kubernetes mode.
const KubePrefix = "k8s:"

// KubeSection is the scenario's section that names the cluster.
const KubeSection = "kubernetes"

var kubeRows = []mode.Descriptor{
	kubeRow(KubeHostNetwork, "engines in hostNetwork pods on a Kubernetes cluster's nodes: the cluster's baseline", oneOrTwoNodes("a cluster")),
	kubeRow(KubePod, "engines in pods on a Kubernetes cluster, the client dialing the server pod's IP over the cluster's CNI", oneOrTwoNodes("a cluster")),
	kubeRow(KubeService, "engines in pods on a Kubernetes cluster, the client dialing the server's ClusterIP Service (kube-proxy)", oneOrTwoNodes("a cluster")),
	kubeRow(KubeNodePort, "engines in pods on a Kubernetes cluster, the client dialing the server's node at a NodePort Service", oneOrTwoNodes("a cluster")),
	kubeRow(KubeHairpin, "server and client in one pod on a Kubernetes cluster, the client reaching its own pod through its ClusterIP Service", onePod),
}

func kubeRow(name, summary string, supports func(string) error) mode.Descriptor {
	return mode.Descriptor{
		Name: name, Summary: summary, Family: mode.Cluster,
		Available: mode.NeedsCluster(KubeSection, "run --kubeconfig FILE"), Supports: supports, New: newKubeMode,
		Addresses: topo.ExternalAddresses,
	}
}

func onePod(topology string) error {
	if topology != topo.CHC {
		return mode.NotApplicable("hairpin is one pod reaching itself, on one node (chc)")
	}
	return nil
}

// kubeMode is what a Kubernetes mode would build on emulated hosts:
// nothing.
type kubeMode struct{}

var _ mode.Mode = kubeMode{}

func newKubeMode(*topo.Topology) mode.Mode { return kubeMode{} }

func (kubeMode) Endpoint(*topo.Host, string) (*topo.Endpoint, error) {
	return nil, mode.Unsupported("Kubernetes modes run on a cluster: give the scenario a kubernetes section or run --kubeconfig")
}

func (kubeMode) Expose(*topo.Endpoint, int) (netip.AddrPort, error) {
	return netip.AddrPort{}, mode.Unsupported("Kubernetes modes run on a cluster")
}
