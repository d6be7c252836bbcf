package kernel

import (
	"net/netip"

	"github.com/vishvananda/netlink"

	"cnbench/internal/mode"
	"cnbench/internal/topo"
)

// IPVlan gives each endpoint an ipvlan sub-interface of the host's NIC.
// Unlike macvlan, every endpoint shares the NIC's MAC. The plain name is
// l2 mode (Docker's default): the endpoint sits on the NIC's segment and
// resolves neighbours itself. "ipvlan:l3" and "ipvlan:l3s" route instead:
// the endpoint has an address of its host's endpoint subnet, sends
// everything out without ARP, and the host's routing table carries it (in
// l3s through the host's netfilter hooks as well).
//
// The mode belongs to the NIC, not to the link: creating an ipvlan in one
// mode switches every ipvlan on that NIC to it, so L2 and L3 endpoints
// cannot share a NIC. A topology is built for one mode, so they never do.
const (
	IPVlan    = "ipvlan"
	IPVlanL3  = IPVlan + ":l3"
	IPVlanL3S = IPVlan + ":l3s"
)

// ipvlanModes maps each variant's name to the kernel's mode.
var ipvlanModes = map[string]netlink.IPVlanMode{
	IPVlan:    netlink.IPVLAN_MODE_L2,
	IPVlanL3:  netlink.IPVLAN_MODE_L3,
	IPVlanL3S: netlink.IPVLAN_MODE_L3S,
}

type ipvlanMode struct {
	t    *topo.Topology
	n    Counter
	mode netlink.IPVlanMode
}

var _ mode.Mode = (*ipvlanMode)(nil)

func newIPVlanMode(name string) func(t *topo.Topology) mode.Mode {
	return func(t *topo.Topology) mode.Mode { return &ipvlanMode{t: t, n: Counter{}, mode: ipvlanModes[name]} }
}

// Endpoint creates the ipvlan on the host's NIC straight inside the
// endpoint's namespace.
//
// Equivalent to, in l2 mode: ip -n HOST link add eth0 link nic0 netns EP
// type ipvlan mode l2; in l3 modes, with ADDR from the host's endpoint
// subnet: ... type ipvlan mode l3; ip -n EP addr add ADDR/24 dev eth0;
// ip -n EP route add default dev eth0
func (m *ipvlanMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	newLink := func(attrs netlink.LinkAttrs) netlink.Link {
		return &netlink.IPVlan{LinkAttrs: attrs, Mode: m.mode}
	}
	if m.mode == netlink.IPVLAN_MODE_L2 {
		return wireEndpoint(m.t, h, name, m.n, topo.BaseEndpointsPerHost, newLink)
	}
	idx, err := m.n.Next(h)
	if err != nil {
		return nil, err
	}
	ep, err := subInterface(m.t, h, name, newLink)
	if err != nil {
		return nil, err
	}
	// The host routes its endpoint subnet to its peers already (chhc, and
	// the router in routed), and ipvlan hands the host what it receives
	// for an endpoint's address, so the endpoint needs no gateway.
	addr := topo.EndpointAddr(h.Index, idx)
	if err := configureEndpoint(ep, netip.PrefixFrom(addr, topo.EndpointSubnet(h.Index).Bits()), netip.Addr{}); err != nil {
		return nil, err
	}
	if err := routeAllOnLink(ep); err != nil {
		return nil, err
	}
	return &topo.Endpoint{Name: name, Host: h, NS: ep.ns, Addr: ep.family.Dial(addr)}, nil
}

func (m *ipvlanMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	return Direct(ep, port)
}
