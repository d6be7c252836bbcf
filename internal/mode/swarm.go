package mode

import (
	"net/netip"

	"cnbench/internal/topo"
)

// Swarm modes put endpoints on the nodes of an existing Docker Swarm
// named by the scenario's swarm section, rather than on emulated hosts:
// the runner deploys them through the swarm manager (package swarm), so
// these descriptors build nothing themselves. chc puts both endpoints on
// one node, chhc on two.
const (
	SwarmOverlay = "swarm:overlay" // a VXLAN overlay network across nodes
	SwarmHost    = "swarm:host"    // the nodes' own network, the baseline
)

// SwarmPrefix starts the name of every swarm mode.
const SwarmPrefix = "swarm:"

func init() {
	for _, d := range []struct{ name, summary string }{
		{SwarmOverlay, "engines as services on Docker Swarm nodes, over a swarm overlay network (VXLAN)"},
		{SwarmHost, "engines as services on Docker Swarm nodes, on the nodes' host network: the swarm baseline"},
	} {
		register(Descriptor{Name: d.name, Summary: d.summary, Available: needsCluster("swarm"), Supports: swarmSupports, New: newSwarmMode})
	}
}

func swarmSupports(topology string) error {
	if topology != topo.CHC && topology != topo.CHHC {
		return notApplicable("a swarm gives one node (chc) or two (chhc), no router between segments")
	}
	return nil
}

// swarmMode is what a swarm mode would build on emulated hosts: nothing.
type swarmMode struct{}

func newSwarmMode(*topo.Topology) Mode { return swarmMode{} }

func (swarmMode) Endpoint(*topo.Host, string) (*topo.Endpoint, error) {
	return nil, unsupported("swarm modes run on a Docker Swarm: give the scenario a swarm section")
}

func (swarmMode) Expose(*topo.Endpoint, int) (netip.AddrPort, error) {
	return netip.AddrPort{}, unsupported("swarm modes run on a Docker Swarm")
}
