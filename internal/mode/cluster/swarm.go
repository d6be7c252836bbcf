// Package cluster is the family of modes whose endpoints are containers
// on an existing cluster's nodes (swarm:*, k8s:*). The runner deploys them
// through the cluster's driver (package internal/cluster, and
// internal/swarm for Docker Swarm), so these rows build nothing on
// emulated hosts themselves.
package cluster

import (
	"net/netip"

	"cnbench/internal/mode"
	"cnbench/internal/topo"
)

// Swarm modes put endpoints on the nodes of an existing Docker Swarm
// named by the scenario's swarm section. chc puts both endpoints on one
// node, chhc on two.
const (
	SwarmOverlay = "swarm:overlay" // a VXLAN overlay network across nodes
	SwarmHost    = "swarm:host"    // the nodes' own network, the baseline
)

// SwarmPrefix starts the name of every swarm mode.
const SwarmPrefix = "swarm:"

// Rows are the cluster family's rows of the mode table.
var Rows = append([]mode.Descriptor{
	swarmRow(SwarmOverlay, "engines as services on Docker Swarm nodes, over a swarm overlay network (VXLAN)"),
	swarmRow(SwarmHost, "engines as services on Docker Swarm nodes, on the nodes' host network: the swarm baseline"),
}, kubeRows...)

func swarmRow(name, summary string) mode.Descriptor {
	return mode.Descriptor{
		Name: name, Summary: summary, Family: mode.Cluster,
		Available: mode.NeedsCluster("swarm"), Supports: oneOrTwoNodes("a swarm"), New: newSwarmMode,
		Addresses: topo.ExternalAddresses,
	}
}

// oneOrTwoNodes is the Supports of modes on a cluster, named by what,
// which gives one node (chc) or two (chhc).
func oneOrTwoNodes(what string) func(topology string) error {
	return func(topology string) error {
		if topology != topo.CHC && topology != topo.CHHC {
			return mode.NotApplicable("%s gives one node (chc) or two (chhc), no router between segments", what)
		}
		return nil
	}
}

// swarmMode is what a swarm mode would build on emulated hosts: nothing.
type swarmMode struct{}

var _ mode.Mode = swarmMode{}

func newSwarmMode(*topo.Topology) mode.Mode { return swarmMode{} }

func (swarmMode) Endpoint(*topo.Host, string) (*topo.Endpoint, error) {
	return nil, mode.Unsupported("swarm modes run on a Docker Swarm: give the scenario a swarm section")
}

func (swarmMode) Expose(*topo.Endpoint, int) (netip.AddrPort, error) {
	return netip.AddrPort{}, mode.Unsupported("swarm modes run on a Docker Swarm")
}
