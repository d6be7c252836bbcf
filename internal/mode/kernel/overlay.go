package kernel

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnbench/internal/mode"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// Overlay joins the endpoints of all hosts in one subnet over VXLAN, as
// Docker's overlay networks and flannel's vxlan backend do: each host has
// a bridge holding the endpoints' veths and a VXLAN device over its NIC,
// and floods unknown frames to every other host's VTEP, learning the rest.
// Every overlay link's MTU is the underlay's less VXLAN's 50 bytes of
// encapsulation, so a full-sized inner frame never needs fragmenting.
const Overlay = "overlay"

const (
	vxlanName = "vx0"
	vxlanID   = 4242
	vxlanPort = 4789 // IANA's VXLAN port
	// vxlanOverhead is what VXLAN adds over IPv4: outer IP 20, UDP 8,
	// VXLAN 8 and the inner Ethernet header 14; over IPv6 the outer
	// header is 20 bytes longer (vxlanOverhead6).
	vxlanOverhead  = 50
	vxlanOverhead6 = vxlanOverhead + 20
)

type overlayMode struct {
	t     *topo.Topology
	n     Counter
	built bool
	// encrypt sends the VXLAN traffic between hosts through IPsec ESP
	// (OverlayIPsec).
	encrypt bool
	// vteps are each host's VXLAN device, by host index.
	vteps map[int]netlink.Link
}

var _ mode.Mode = (*overlayMode)(nil)

func newOverlayMode(t *topo.Topology) mode.Mode { return &overlayMode{t: t, n: Counter{}} }

func newIPsecOverlayMode(t *topo.Topology) mode.Mode {
	return &overlayMode{t: t, n: Counter{}, encrypt: true}
}

func overlayAvailable() error {
	return mode.Probe("link:vxlan", func(_ *netns.NS, h *netlink.Handle, parent netlink.Link) error {
		vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: "x0"}, VxlanId: vxlanID, VtepDevIndex: parent.Attrs().Index, Port: vxlanPort}
		if err := h.LinkAdd(vx); err != nil {
			return mode.KernelLacks("vxlan links", err)
		}
		return nil
	})
}

func (m *overlayMode) mtu() int {
	mtu := m.t.MTU() - vxlanOverhead
	if m.t.Family().Has6() {
		mtu = m.t.MTU() - vxlanOverhead6
	}
	if m.encrypt {
		mtu -= espOverhead
	}
	return mtu
}

// Endpoint places an endpoint on host h's overlay bridge, building every
// host's bridge and VTEP first (buildHost).
//
// Equivalent to: ip -n HOST link add v-NAME mtu M type veth peer name eth0
// netns EP; ip -n HOST link set v-NAME master br0; ip -n EP addr add
// 198.19.240+I.N/20 dev eth0
func (m *overlayMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	if m.encrypt {
		if err := alone(OverlayIPsec, m.t, h); err != nil {
			return nil, err
		}
	}
	if !m.built {
		// Every VTEP must know every other before the first frame.
		for _, host := range m.t.Hosts {
			if err := m.buildHost(host); err != nil {
				return nil, err
			}
		}
		m.built = true
	}
	idx, err := m.n.Next(h)
	if err != nil {
		return nil, err
	}
	ep, err := newEndpointNS(m.t, name)
	if err != nil {
		return nil, err
	}
	if err := withoutIPv6(m.t.Family(), ep.ns); err != nil {
		return nil, err
	}
	hostSide, err := vethInto(h, ep, "v-"+name, m.mtu())
	if err != nil {
		return nil, err
	}
	br, err := h.Handle.LinkByName(bridgeName)
	if err != nil {
		return nil, fmt.Errorf("find %s in %q: %w", bridgeName, h.NS.Name, err)
	}
	if err := h.Handle.LinkSetMaster(hostSide, br); err != nil {
		return nil, fmt.Errorf("enslave %s to %s in %q: %w", hostSide.Attrs().Name, bridgeName, h.NS.Name, err)
	}
	addr := topo.OverlayAddr(h.Index, idx)
	if err := configureEndpoint(ep, netip.PrefixFrom(addr, topo.OverlaySubnet.Bits()), netip.Addr{}); err != nil {
		return nil, err
	}
	if err := m.announce(h, hostSide, ep, addr); err != nil {
		return nil, err
	}
	return &topo.Endpoint{Name: name, Host: h, NS: ep.ns, Addr: ep.family.Dial(addr)}, nil
}

var _ mode.Acquainter = (*overlayMode)(nil)

// Acquaint pins client and server in each other's ARP entries.
//
// Equivalent to: ip -n CLIENT neigh replace SERVER lladdr MAC(SERVER) dev
// eth0 nud permanent, and the same the other way
func (m *overlayMode) Acquaint(client, server *topo.Endpoint) error {
	return pinEachOther(m.t.Family(), client, server)
}

// announce tells every other host's VTEP where a new endpoint is, as
// Docker's overlay driver does from its gossip: the endpoint's MAC behind
// this host's VTEP, and its address at that MAC, which the VTEP then
// answers ARP for itself (it runs with proxy on). Without them, every
// ARP request and every frame to a MAC not yet learnt went to every other
// host and was flooded to each of their endpoints: with 32 hosts of 32
// endpoints, an all-to-all case's connections drowned in the copies, which
// overflowed the receiving CPUs' backlogs.
//
// Equivalent to, on each other host:
//
//	bridge fdb append MAC dev vx0 dst HOST self permanent
//	ip neigh add ADDR lladdr MAC dev vx0 nud permanent
func (m *overlayMode) announce(h *topo.Host, hostSide netlink.Link, ep endpointNS, addr netip.Addr) error {
	eth, err := ep.handle.LinkByName(endpointIfName)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", endpointIfName, ep.ns.Name, err)
	}
	mac := eth.Attrs().HardwareAddr
	if err := bridgeEntry(h, hostSide, mac); err != nil {
		return err
	}
	for _, other := range m.t.Hosts {
		if other == h {
			continue
		}
		vx := m.vteps[other.Index]
		if err := bridgeEntry(other, vx, mac); err != nil {
			return err
		}
		fdb := &netlink.Neigh{LinkIndex: vx.Attrs().Index, Family: unix.AF_BRIDGE, Flags: netlink.NTF_SELF,
			State: netlink.NUD_NOARP | netlink.NUD_PERMANENT, HardwareAddr: mac, IP: net.IP(m.underlay(h.Addr).AsSlice())}
		if err := other.Handle.NeighAppend(fdb); err != nil {
			return fmt.Errorf("forwarding entry for %s on %s in %q: %w", mac, vxlanName, other.NS.Name, err)
		}
		if err := m.t.Family().PinNeighbour(other.Handle, other.NS.Name, vx, addr, mac); err != nil {
			return err
		}
	}
	return nil
}

// withoutIPv6 keeps the links made in ns from here on off IPv6 where the
// topology's family has none. A link with IPv6 sends its duplicate
// address probes, multicast listener reports and router solicitations
// for some seconds after it comes up: VXLAN copies every one to each
// other host, whose bridge floods it to every endpoint. With 32 hosts of
// 32 endpoints that was a million frames, which the receiving CPUs'
// backlogs dropped along with the connections' first segments. With
// IPv6 the namespace probes and solicits nothing (topo's
// PrepareNamespace); the listener reports remain.
//
// Equivalent to: ip netns exec NS sysctl -w net.ipv6.conf.default.disable_ipv6=1
func withoutIPv6(f topo.Family, ns *netns.NS) error {
	if f.Has6() {
		return nil
	}
	return ns.Sysctl("net.ipv6.conf.default.disable_ipv6", "1")
}

// announced reports whether every host's endpoints are announced to
// every VTEP (announce), which then answers ARP for them (proxy). Hosts
// beyond this topology's reach (on other machines, in guests, or the
// other hosts seen from a guest) announce nothing, so their endpoints'
// ARP goes through the VTEPs and their MACs are learnt.
func (m *overlayMode) announced() bool { return len(m.t.Peers) == 0 && len(m.t.Guests) == 0 }

// underlay is a host address as the VTEPs reach it: over IPv6 where the
// family has it.
func (m *overlayMode) underlay(a netip.Addr) netip.Addr { return m.t.Family().Dial(a) }

// buildHost makes host h's bridge and VTEP, and points the VTEP's flood
// list at every other host; for OverlayIPsec it encrypts the VXLAN
// traffic to each of them first (secureVXLAN).
//
// Equivalent to:
//
//	ip link add br0 mtu M type bridge
//	ip link add vx0 mtu M type vxlan id 4242 local HOST dev nic0 dstport 4789 [proxy: see announced]
//	ip link set vx0 master br0; ip link set vx0 up; ip link set br0 up
//	bridge fdb append 00:00:00:00:00:00 dev vx0 dst OTHER   (each other host)
func (m *overlayMode) buildHost(h *topo.Host) error {
	if err := withoutIPv6(m.t.Family(), h.NS); err != nil {
		return err
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridgeName, MTU: m.mtu()}}
	if err := h.Handle.LinkAdd(br); err != nil {
		return fmt.Errorf("create bridge %s in %q: %w", bridgeName, h.NS.Name, err)
	}
	nic, err := h.Handle.LinkByName(topo.NICName)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", topo.NICName, h.NS.Name, err)
	}
	vx := &netlink.Vxlan{
		LinkAttrs:    netlink.LinkAttrs{Name: vxlanName, MTU: m.mtu(), MasterIndex: br.Attrs().Index},
		VxlanId:      vxlanID,
		VtepDevIndex: nic.Attrs().Index,
		SrcAddr:      net.IP(m.underlay(h.Addr).AsSlice()),
		Port:         vxlanPort,
		Learning:     true,
		Proxy:        m.announced(),
	}
	if err := h.Handle.LinkAdd(vx); err != nil {
		return fmt.Errorf("create vxlan %s in %q: %w", vxlanName, h.NS.Name, err)
	}
	if m.vteps == nil {
		m.vteps = map[int]netlink.Link{}
	}
	m.vteps[h.Index] = vx
	for _, l := range []netlink.Link{vx, br} {
		if err := h.Handle.LinkSetUp(l); err != nil {
			return fmt.Errorf("set %s up in %q: %w", l.Attrs().Name, h.NS.Name, err)
		}
	}
	var vteps []netip.Addr
	for _, other := range m.t.Others(h) {
		vteps = append(vteps, m.underlay(other.Addr))
	}
	if m.encrypt {
		if err := secureVXLAN(m.t, h, m.underlay(h.Addr), vteps); err != nil {
			return err
		}
	}
	for _, vtep := range vteps {
		flood := &netlink.Neigh{
			LinkIndex:    vx.Attrs().Index,
			Family:       unix.AF_BRIDGE,
			Flags:        netlink.NTF_SELF,
			State:        netlink.NUD_NOARP | netlink.NUD_PERMANENT,
			HardwareAddr: make(net.HardwareAddr, 6),
			IP:           net.IP(vtep.AsSlice()),
		}
		if err := h.Handle.NeighAppend(flood); err != nil {
			return fmt.Errorf("flood entry for VTEP %s on %s in %q: %w", vtep, vxlanName, h.NS.Name, err)
		}
	}
	return nil
}

func (m *overlayMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	return Direct(ep, port)
}
