package kernel

import (
	"crypto/rand"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// endpointIfName is the endpoint's interface, as in a container.
const endpointIfName = "eth0"

// endpointNS is a fresh endpoint namespace with a netlink handle in it.
type endpointNS struct {
	ns     *netns.NS
	handle *netlink.Handle
	family topo.Family
}

// newEndpointNS makes an endpoint's namespace.
//
// Equivalent to: ip netns add cnb-TOKEN-NAME
func newEndpointNS(t *topo.Topology, name string) (endpointNS, error) {
	ns, h, err := t.NewNamespace(name)
	if err != nil {
		return endpointNS{}, err
	}
	return endpointNS{ns: ns, handle: h, family: t.Family()}, nil
}

// vethInto creates a veth pair with hostSide in host h and eth0 in the
// endpoint, both with the given MTU, and brings the host side up.
//
// Equivalent to: ip -n HOST link add HOSTSIDE mtu MTU type veth peer name eth0 netns EP
func vethInto(h *topo.Host, ep endpointNS, hostSide string, mtu int) (netlink.Link, error) {
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: hostSide, MTU: mtu},
		PeerName:      endpointIfName,
		PeerNamespace: netlink.NsFd(int(ep.ns.Handle())),
	}
	if err := h.Handle.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("create veth %s in %q with peer in %q: %w", hostSide, h.NS.Name, ep.ns.Name, err)
	}
	link, err := h.Handle.LinkByName(hostSide)
	if err != nil {
		return nil, fmt.Errorf("find %s in %q: %w", hostSide, h.NS.Name, err)
	}
	if err := h.Handle.LinkSetUp(link); err != nil {
		return nil, fmt.Errorf("set %s up in %q: %w", hostSide, h.NS.Name, err)
	}
	return link, nil
}

// configureEndpoint addresses eth0 (in each of the topology's families),
// brings it up and routes through gw. A /32 address with an on-link
// gateway is the point-to-point layout of the CNI ptp plugin; a wider
// prefix is an ordinary LAN.
//
// Equivalent to: ip addr add ADDR dev eth0; ip link set eth0 up;
// ip route add GW dev eth0 scope link; ip route add default via GW
// (and with IPv6 the same in the IPv6 plan, addresses without DAD)
func configureEndpoint(ep endpointNS, addr netip.Prefix, gw netip.Addr) error {
	link, err := ep.handle.LinkByName(endpointIfName)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", endpointIfName, ep.ns.Name, err)
	}
	if err := ep.family.AddAddress(ep.handle, ep.ns.Name, link, addr, netlink.SCOPE_UNIVERSE); err != nil {
		return err
	}
	if err := ep.handle.LinkSetUp(link); err != nil {
		return fmt.Errorf("set %s up in %q: %w", endpointIfName, ep.ns.Name, err)
	}
	if !gw.IsValid() {
		return nil
	}
	if !addr.Contains(gw) {
		onLink := topo.Route{Link: link.Attrs().Index, Dst: netip.PrefixFrom(gw, gw.BitLen()), OnLink: true}
		if err := ep.family.AddRoute(ep.handle, ep.ns.Name, onLink); err != nil {
			return err
		}
	}
	return ep.family.AddRoute(ep.handle, ep.ns.Name, topo.Route{Link: link.Attrs().Index, Gw: gw})
}

// randomMAC is a random unicast address, locally administered.
func randomMAC() (net.HardwareAddr, error) {
	mac := make(net.HardwareAddr, 6)
	if _, err := rand.Read(mac); err != nil {
		return nil, fmt.Errorf("random MAC address: %w", err)
	}
	mac[0] = mac[0]&^0x01 | 0x02
	return mac, nil
}

// pinNeighbours makes an endpoint and its gateway, which hostLink in the
// host's namespace holds, known to each other for good, so that neither
// resolves the other by ARP. The kernel keeps one ARP table for every
// namespace and refuses new entries beyond gc_thresh3 (1024 unless the
// machine's owner raised it; cnbench leaves it alone): a thousand clients
// each resolving their gateway, and the host each of them, needed 2000
// and failed to connect. Permanent entries do not count against it.
//
// Equivalent to: ip -n EP neigh add GW lladdr MAC(HOSTLINK) dev eth0 nud
// permanent; ip -n HOST neigh add ADDR lladdr MAC(eth0) dev HOSTLINK nud
// permanent
func pinNeighbours(h *topo.Host, hostLink netlink.Link, ep endpointNS, addr, gw netip.Addr) error {
	eth, err := ep.handle.LinkByName(endpointIfName)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", endpointIfName, ep.ns.Name, err)
	}
	if err := ep.family.PinNeighbour(ep.handle, ep.ns.Name, eth, gw, hostLink.Attrs().HardwareAddr); err != nil {
		return err
	}
	return ep.family.PinNeighbour(h.Handle, h.NS.Name, hostLink, addr, eth.Attrs().HardwareAddr)
}

// routeAllOnLink sends everything from the endpoint straight out of eth0,
// for devices that need no gateway's MAC (ipvlan in l3 modes does not ARP).
//
// Equivalent to: ip route add default dev eth0
func routeAllOnLink(ep endpointNS) error {
	link, err := ep.handle.LinkByName(endpointIfName)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", endpointIfName, ep.ns.Name, err)
	}
	return ep.family.AddRoute(ep.handle, ep.ns.Name, topo.Route{Link: link.Attrs().Index, OnLink: true})
}

// Counter numbers the endpoints a mode places on each host, from 1.
type Counter map[int]int

// Next numbers an endpoint of a mode that numbers a host's endpoints in
// its first subnet only, up to topo.BaseEndpointsPerHost.
func (c Counter) Next(h *topo.Host) (int, error) {
	return c.next(h, topo.BaseEndpointsPerHost)
}

// NextWithin numbers an endpoint of a mode that also numbers from the
// host's extension block and holds at most limit endpoints on a host (the
// mode table's HostEndpoints), within the host's capacity.
func (c Counter) NextWithin(h *topo.Host, limit int) (int, error) {
	return c.next(h, min(limit, topo.HostCapacity(h.Index)))
}

func (c Counter) next(h *topo.Host, limit int) (int, error) {
	c[h.Index]++
	n := c[h.Index]
	if n > limit {
		return 0, fmt.Errorf("too many endpoints on host %d: it holds %d", h.Index, limit)
	}
	return n, nil
}

// Direct is the Expose of modes whose servers clients reach at their own
// address.
func Direct(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	return netip.AddrPortFrom(ep.Addr, uint16(port)), nil
}

// pinEachOther makes two endpoints on one link layer known to each other
// for good (see mode.Acquainter), in each of the family's forms.
func pinEachOther(f topo.Family, a, b *topo.Endpoint) error {
	ha, err := netlink.NewHandleAt(a.NS.Handle())
	if err != nil {
		return fmt.Errorf("netlink handle in %q: %w", a.NS.Name, err)
	}
	defer ha.Close()
	hb, err := netlink.NewHandleAt(b.NS.Handle())
	if err != nil {
		return fmt.Errorf("netlink handle in %q: %w", b.NS.Name, err)
	}
	defer hb.Close()
	ethA, err := ha.LinkByName(endpointIfName)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", endpointIfName, a.NS.Name, err)
	}
	ethB, err := hb.LinkByName(endpointIfName)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", endpointIfName, b.NS.Name, err)
	}
	if err := f.PinNeighbour(ha, a.NS.Name, ethA, b.Addr, ethB.Attrs().HardwareAddr); err != nil {
		return err
	}
	return f.PinNeighbour(hb, b.NS.Name, ethB, a.Addr, ethA.Attrs().HardwareAddr)
}
