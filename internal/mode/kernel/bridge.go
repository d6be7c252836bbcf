package kernel

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnbench/internal/mode"
	"cnbench/internal/topo"
)

// Bridge is a veth pair per endpoint whose host side is enslaved to a
// Linux bridge on the host, as docker0 and the CNI bridge plugin build.
// The bridge holds the endpoints' gateway address; traffic to other hosts
// is routed by the host.
const Bridge = "bridge"

// bridgeName is the bridge inside each host namespace.
const bridgeName = "br0"

type bridgeMode struct {
	t       *topo.Topology
	n       Counter
	bridges map[int]netlink.Link
}

var _ mode.Mode = (*bridgeMode)(nil)

func newBridgeMode(t *topo.Topology) mode.Mode {
	return &bridgeMode{t: t, n: Counter{}, bridges: map[int]netlink.Link{}}
}

// Endpoint places an endpoint behind host h's bridge (bridgedEndpoint).
func (m *bridgeMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	return bridgedEndpoint(m.t, h, name, m.n, m.bridges)
}

func (m *bridgeMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	return Direct(ep, port)
}

var _ mode.Acquainter = (*bridgeMode)(nil)

// Acquaint pins a client and its server in each other's ARP entries when
// they share a subnet behind one host (endpoints elsewhere go through
// their gateways, which are pinned already): a fan-in of 1022 clients
// had 249 of them resolve the server by ARP, and some failed.
func (m *bridgeMode) Acquaint(client, server *topo.Endpoint) error {
	return acquaintBehindHost(m.t.Family(), client, server)
}

// acquaintBehindHost pins client and server to each other where they sit
// in one endpoint subnet of one host.
func acquaintBehindHost(f topo.Family, client, server *topo.Endpoint) error {
	if client.Host != server.Host {
		return nil
	}
	for _, subnet := range topo.EndpointSubnets(client.Host.Index) {
		if subnet.Contains(topo.To4(client.Addr)) && subnet.Contains(topo.To4(server.Addr)) {
			return pinEachOther(f, client, server)
		}
	}
	return nil
}

// BridgePorts is how many endpoints a host's bridge takes: a Linux bridge
// holds at most 1024 ports (BR_MAX_PORTS; the 1024th is refused with
// EXFULL), and one port number is the bridge's own.
const BridgePorts = 1023

// bridgedEndpoint places an endpoint behind host h's bridge, creating the
// bridge on first use.
//
// Equivalent to: ip -n HOST link add v-NAME type veth peer name eth0 netns EP;
// ip -n HOST link set v-NAME master br0; ip -n EP addr add 198.19.I.N/24
// dev eth0; ip -n EP route add default via 198.19.I.254
func bridgedEndpoint(t *topo.Topology, h *topo.Host, name string, n Counter, bridges map[int]netlink.Link) (*topo.Endpoint, error) {
	br, ok := bridges[h.Index]
	if !ok {
		if err := withoutIPv6(t.Family(), h.NS); err != nil {
			return nil, err
		}
		var err error
		if br, err = createBridge(t, h); err != nil {
			return nil, err
		}
		bridges[h.Index] = br
	}
	idx, err := n.NextWithin(h, BridgePorts)
	if err != nil {
		return nil, err
	}
	ep, err := newEndpointNS(t, name)
	if err != nil {
		return nil, err
	}
	if err := withoutIPv6(t.Family(), ep.ns); err != nil {
		return nil, err
	}
	hostSide, err := vethInto(h, ep, "v-"+name, t.MTU())
	if err != nil {
		return nil, err
	}
	if err := h.Handle.LinkSetMaster(hostSide, br); err != nil {
		return nil, fmt.Errorf("enslave %s to %s in %q: %w", hostSide.Attrs().Name, bridgeName, h.NS.Name, err)
	}
	if err := portKnows(h, hostSide, ep); err != nil {
		return nil, err
	}
	// The bridge answers ARP for the endpoints it knows (pinNeighbours)
	// instead of flooding it: a broadcast to a thousand ports queues a
	// copy for each on one CPU's backlog, past netdev_max_backlog (1000),
	// and the host's answer queued behind them was dropped.
	if err := h.Handle.LinkSetBrNeighSuppress(hostSide, true); err != nil {
		return nil, fmt.Errorf("neigh_suppress on %s in %q: %w", hostSide.Attrs().Name, h.NS.Name, err)
	}
	return numberBehind(h, br, ep, idx, name)
}

// numberBehind gives endpoint idx behind host h its address in the subnet
// it is numbered in, with the host's address there, on hostLink, as its
// gateway, and pins the two neighbours.
//
// Equivalent to: ip -n EP addr add 198.19.I.N/24 dev eth0; ip -n EP route
// add default via 198.19.I.254 (or the extension block's, see topo);
// (pinNeighbours)
func numberBehind(h *topo.Host, hostLink netlink.Link, ep endpointNS, idx int, name string) (*topo.Endpoint, error) {
	addr, gw := topo.EndpointPrefix(h.Index, idx), topo.EndpointGateway(h.Index, idx)
	if err := configureEndpoint(ep, addr, gw); err != nil {
		return nil, err
	}
	if err := pinNeighbours(h, hostLink, ep, addr.Addr(), gw); err != nil {
		return nil, err
	}
	return &topo.Endpoint{Name: name, Host: h, NS: ep.ns, Addr: ep.family.Dial(addr.Addr())}, nil
}

// createBridge makes host h's bridge holding the endpoints' gateway.
//
// Equivalent to: ip link add br0 type bridge; ip addr add 198.19.I.254/24
// dev br0; ip link set br0 up
func createBridge(t *topo.Topology, h *topo.Host) (netlink.Link, error) {
	// A bridge without an address of its own takes its lowest port's,
	// which changes as ports come: the endpoints' pinned gateway would go
	// stale.
	mac, err := randomMAC()
	if err != nil {
		return nil, err
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridgeName, MTU: t.MTU(), HardwareAddr: mac}}
	if err := h.Handle.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("create bridge %s in %q: %w", bridgeName, h.NS.Name, err)
	}
	return br, holdGateway(t.Family(), h, br)
}

// holdGateway gives link host h's addresses on its endpoint subnets, the
// endpoints' gateways, and brings it up.
//
// Equivalent to: ip addr add 198.19.I.254/24 dev LINK; (for hosts with an
// extension block) ip addr add EXT.254/22 dev LINK; ip link set LINK up
func holdGateway(f topo.Family, h *topo.Host, link netlink.Link) error {
	for _, gw := range topo.Gateways(h.Index) {
		if err := f.AddAddress(h.Handle, h.NS.Name, link, gw, netlink.SCOPE_UNIVERSE); err != nil {
			return err
		}
	}
	if err := h.Handle.LinkSetUp(link); err != nil {
		return fmt.Errorf("set %s up in %q: %w", link.Attrs().Name, h.NS.Name, err)
	}
	return nil
}

// portKnows tells the bridge which port an endpoint is behind before its
// first frame. An endpoint without IPv6 (withoutIPv6) sends nothing of its
// own accord, so until it did the bridge flooded every frame for it to
// every port: at a thousand ports, past the backlog of the CPU that
// queued the copies.
//
// Equivalent to: bridge -n HOST fdb replace MAC(EP) dev HOSTSIDE master static
func portKnows(h *topo.Host, hostSide netlink.Link, ep endpointNS) error {
	eth, err := ep.handle.LinkByName(endpointIfName)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", endpointIfName, ep.ns.Name, err)
	}
	return bridgeEntry(h, hostSide, eth.Attrs().HardwareAddr)
}

// bridgeEntry tells host h's bridge that mac is behind its port link, for
// good.
//
// Equivalent to: bridge -n HOST fdb replace MAC dev LINK master static
func bridgeEntry(h *topo.Host, link netlink.Link, mac net.HardwareAddr) error {
	entry := &netlink.Neigh{LinkIndex: link.Attrs().Index, Family: unix.AF_BRIDGE, Flags: netlink.NTF_MASTER,
		State: netlink.NUD_NOARP, HardwareAddr: mac}
	if err := h.Handle.NeighSet(entry); err != nil {
		return fmt.Errorf("bridge entry for %s on %s in %q: %w", mac, link.Attrs().Name, h.NS.Name, err)
	}
	return nil
}
