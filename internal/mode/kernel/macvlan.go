package kernel

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"

	"cnbench/internal/mode"
	"cnbench/internal/topo"
)

// Macvlan gives each endpoint a macvlan sub-interface of the host's NIC:
// the endpoint sits directly on the wire with its own MAC and an address
// of the NIC's segment, behind no veth pair and no bridge. The plain name
// is bridge mode, where endpoints on one NIC switch frames to each other
// inside the driver; "macvlan:MODE" names the others:
//
//   - private: endpoints on one NIC cannot reach each other at all;
//   - vepa: every frame leaves through the NIC, and endpoints on one NIC
//     reach each other only if the switch sends frames back (802.1Qbg
//     reflective relay, hairpin);
//   - passthru: the NIC is handed to a single endpoint.
const (
	Macvlan         = "macvlan"
	MacvlanPrivate  = Macvlan + ":private"
	MacvlanVEPA     = Macvlan + ":vepa"
	MacvlanPassthru = Macvlan + ":passthru"
)

// macvlanModes maps each variant's name to the kernel's mode.
var macvlanModes = map[string]netlink.MacvlanMode{
	Macvlan:         netlink.MACVLAN_MODE_BRIDGE,
	MacvlanPrivate:  netlink.MACVLAN_MODE_PRIVATE,
	MacvlanVEPA:     netlink.MACVLAN_MODE_VEPA,
	MacvlanPassthru: netlink.MACVLAN_MODE_PASSTHRU,
}

type macvlanMode struct {
	t     *topo.Topology
	n     Counter
	mode  netlink.MacvlanMode
	relay bool // reflective relay asked of the switch already
}

var _ mode.Mode = (*macvlanMode)(nil)

func newMacvlanMode(name string) func(t *topo.Topology) mode.Mode {
	return func(t *topo.Topology) mode.Mode { return &macvlanMode{t: t, n: Counter{}, mode: macvlanModes[name]} }
}

// macvlanSupports rules out the variants that cannot connect two
// endpoints on one NIC, which is what chc asks.
func macvlanSupports(name string) func(topology string) error {
	return func(topology string) error {
		if topology != topo.CHC {
			return nil
		}
		switch macvlanModes[name] {
		case netlink.MACVLAN_MODE_PRIVATE:
			return mode.NotApplicable("%s forbids endpoints on one NIC to talk to each other, and %s puts both on one NIC", name, topology)
		case netlink.MACVLAN_MODE_PASSTHRU:
			return mode.NotApplicable("%s hands the NIC to a single endpoint, and %s needs two on one NIC", name, topology)
		}
		return nil
	}
}

// macvlanGuestSupports rules out VEPA in cvc, where both endpoints sit in
// one guest.
func macvlanGuestSupports(name string) func(topology string) error {
	return func(topology string) error {
		if topology == topo.CVC && name == MacvlanVEPA {
			return mode.NotApplicable("%s: the guest's frames would have to hairpin at its host's bridge, which does not reflect them", name)
		}
		return nil
	}
}

// Endpoint creates the macvlan on the host's NIC straight inside the
// endpoint's namespace; the endpoint routes other segments through the
// segment's router, where there is one.
//
// Equivalent to: ip -n HOST link add eth0 link nic0 netns EP type macvlan mode MODE
func (m *macvlanMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	if m.mode == netlink.MACVLAN_MODE_VEPA && !m.relay {
		if err := m.t.EnableReflectiveRelay(); err != nil {
			return nil, err
		}
		m.relay = true
	}
	return wireEndpoint(m.t, h, name, m.n, MacvlanEndpoints, func(attrs netlink.LinkAttrs) netlink.Link {
		return &netlink.Macvlan{LinkAttrs: attrs, Mode: m.mode}
	})
}

func (m *macvlanMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	return Direct(ep, port)
}

var _ mode.Acquainter = (*macvlanMode)(nil)

// Acquaint pins a client and its server in each other's ARP entries where
// they share a segment (everywhere but across the routed topology's
// router).
func (m *macvlanMode) Acquaint(client, server *topo.Endpoint) error {
	if !client.Host.Segment.Contains(topo.To4(server.Addr)) {
		return nil
	}
	return pinEachOther(m.t.Family(), client, server)
}

// MacvlanEndpoints is how many macvlan endpoints a host's NIC takes here:
// as many as the host numbers. A broadcast from one (an ARP request)
// reaches every other through one CPU's backlog, which holds
// netdev_max_backlog frames (1000, the machine's setting), so with 1250
// endpoints resolving each other by ARP the copies for the last ones were
// dropped, and a host held 900. Clients and servers are now acquainted
// (Acquaint) and endpoints send no IPv6 of their own, so nothing is
// broadcast: a fan-in of 1249 clients ran.
const MacvlanEndpoints = topo.MaxEndpointsPerHost

// wireEndpoint places an endpoint whose device, made by newLink, is a
// sub-interface of the host's NIC with an address on the NIC's segment,
// one of at most limit on the host (the mode table's HostEndpoints).
//
// Equivalent to: (subInterface); ip -n EP addr add 198.18.I.N/BITS dev eth0;
// ip -n EP route add default via ROUTER (in routed)
func wireEndpoint(t *topo.Topology, h *topo.Host, name string, n Counter, limit int, newLink func(netlink.LinkAttrs) netlink.Link) (*topo.Endpoint, error) {
	idx, err := n.NextWithin(h, limit)
	if err != nil {
		return nil, err
	}
	addr := topo.WireAddr(h.Index, idx)
	if !h.Segment.Contains(addr) {
		// A routed topology's segment is the host's /24.
		return nil, fmt.Errorf("too many endpoints on host %d: its segment %s holds %d on the wire", h.Index, h.Segment, topo.BaseEndpointsPerHost)
	}
	ep, err := subInterface(t, h, name, newLink)
	if err != nil {
		return nil, err
	}
	if err := configureEndpoint(ep, netip.PrefixFrom(addr, h.Segment.Bits()), h.Router); err != nil {
		return nil, err
	}
	if err := pinRouter(t, h, ep, addr); err != nil {
		return nil, err
	}
	return &topo.Endpoint{Name: name, Host: h, NS: ep.ns, Addr: ep.family.Dial(addr)}, nil
}

// subInterface creates a new endpoint namespace and, in it, eth0 as a
// sub-interface of the host's NIC.
//
// Equivalent to: ip netns add EP; ip -n HOST link add eth0 link nic0 netns EP
// type TYPE ...
func subInterface(t *topo.Topology, h *topo.Host, name string, newLink func(netlink.LinkAttrs) netlink.Link) (endpointNS, error) {
	nic, err := h.Handle.LinkByName(topo.NICName)
	if err != nil {
		return endpointNS{}, fmt.Errorf("find %s in %q: %w", topo.NICName, h.NS.Name, err)
	}
	ep, err := newEndpointNS(t, name)
	if err != nil {
		return endpointNS{}, err
	}
	// Where the wire carries IPv4 only, its copies of every endpoint's
	// IPv6 multicast would reach every other endpoint (see withoutIPv6).
	if err := withoutIPv6(t.Family(), ep.ns); err != nil {
		return endpointNS{}, err
	}
	link := newLink(netlink.LinkAttrs{
		Name:        endpointIfName,
		ParentIndex: nic.Attrs().Index,
		MTU:         t.MTU(),
		Namespace:   netlink.NsFd(int(ep.ns.Handle())),
	})
	if err := h.Handle.LinkAdd(link); err != nil {
		return endpointNS{}, fmt.Errorf("create %s on %s in %q into %q: %w", link.Type(), topo.NICName, h.NS.Name, ep.ns.Name, err)
	}
	return ep, nil
}

// pinRouter makes a wire endpoint on a routed segment and the router
// there, its gateway, known to each other for good (topo.PinAtRouter).
//
// Equivalent to: (PinAtRouter); ip -n EP neigh replace ROUTER lladdr
// MAC(ROUTER'S PORT) dev eth0 nud permanent
func pinRouter(t *topo.Topology, h *topo.Host, ep endpointNS, addr netip.Addr) error {
	if !h.Router.IsValid() {
		return nil
	}
	eth, err := ep.handle.LinkByName(endpointIfName)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", endpointIfName, ep.ns.Name, err)
	}
	routerMAC, err := t.PinAtRouter(h, addr, eth.Attrs().HardwareAddr)
	if err != nil || routerMAC == nil {
		return err
	}
	return ep.family.PinNeighbour(ep.handle, ep.ns.Name, eth, h.Router, routerMAC)
}
