package topo

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	"cnbench/internal/netns"
)

// Build creates the hosts of a topology and wires them: chc gets one host
// whose NIC's far end sits in a stub namespace (so the NIC has carrier, as
// a real one plugged into a switch does); chhc gets two hosts whose NICs
// are the two ends of one veth pair, with routes to each other's endpoint
// subnets, as two directly cabled machines with static routes; routed
// cables each of two hosts to its own port of a router host, one subnet
// per cable; switch:N plugs N hosts into one switch (buildSwitch), and
// leafspine:N cables them to leaf routers under a spine (buildLeafSpine).
func Build(kind string, token netns.Token, opts Options) (t *Topology, err error) {
	t = &Topology{Kind: kind, Token: token, Opts: opts}
	defer func() {
		if err == nil {
			err = t.pinWires()
		}
		if err == nil {
			err = t.AwaitIPv6()
		}
		if err != nil {
			err = errors.Join(err, t.Close())
			t = nil
		}
	}()
	switch kind {
	case CHC:
		return t, t.buildCHC()
	case CHHC:
		return t, t.buildCHHC()
	case Routed:
		return t, t.buildRouted()
	case CVC, CVHC, CHVC, CVHHC, CHHVC, VV:
		return t, t.buildVM()
	}
	if err := CheckKind(kind); err != nil {
		return t, fmt.Errorf("build topology: %w", err)
	}
	if n := LeafSpineHosts(kind); n > 0 {
		return t, t.buildLeafSpine(n)
	}
	return t, t.buildSwitch(SwitchHosts(kind))
}

func (t *Topology) buildCHC() error {
	h, err := t.newHost(1, HostAddr(1), netip.PrefixFrom(HostAddr(1), UnderlayBits).Masked(), netip.Addr{})
	if err != nil {
		return err
	}
	stub, _, err := t.NewNamespace("w")
	if err != nil {
		return err
	}
	t.stub = stub
	if err := t.wire(h.Handle, h.NS, NICName, stub, NICName); err != nil {
		return err
	}
	if err := stub.Do(func() error { return setUpByName(NICName) }); err != nil {
		return fmt.Errorf("set the stub end of the wire up: %w", err)
	}
	return t.configureNIC(h, NICName, netip.PrefixFrom(h.Addr, UnderlayBits))
}

func (t *Topology) buildCHHC() error {
	for i := 1; i <= 2; i++ {
		if _, err := t.newHost(i, HostAddr(i), netip.PrefixFrom(HostAddr(i), UnderlayBits).Masked(), netip.Addr{}); err != nil {
			return err
		}
	}
	a, b := t.Hosts[0], t.Hosts[1]
	if err := t.wire(a.Handle, a.NS, NICName, b.NS, NICName); err != nil {
		return err
	}
	for _, h := range t.Hosts {
		if err := t.configureNIC(h, NICName, netip.PrefixFrom(h.Addr, UnderlayBits)); err != nil {
			return err
		}
	}
	// Equivalent to: ip route add 198.19.J.0/24 via 198.18.0.J
	return t.RouteEndpoints(EndpointSubnets)
}

// buildRouted makes hosts 1 and 2 and a router whose port nicI is cabled
// to host I's NIC. Each host routes the whole benchmark range through the
// router; the router routes each host's endpoint subnet to that host.
//
// Equivalent to, for each host I:
//
//	ip -n rtr link add nicI type veth peer name nic0 netns hI
//	ip -n rtr addr add 198.18.I.254/24 dev nicI
//	ip -n hI addr add 198.18.I.253/24 dev nic0
//	ip -n hI route add 198.18.0.0/15 via 198.18.I.254
//	ip -n rtr route add 198.19.I.0/24 via 198.18.I.253
func (t *Topology) buildRouted() error {
	rns, rh, err := t.NewNamespace("rtr")
	if err != nil {
		return err
	}
	if err := t.forward(rns); err != nil {
		return err
	}
	t.RouterHost = &Host{Name: "rtr", NS: rns, Handle: rh}
	for i := 1; i <= 2; i++ {
		h, err := t.newHost(i, SegmentHostAddr(i), SegmentPrefix(i), SegmentRouterAddr(i))
		if err != nil {
			return err
		}
		port := fmt.Sprintf("nic%d", i)
		if err := t.wire(rh, rns, port, h.NS, NICName); err != nil {
			return err
		}
		t.cabledTo(i, rns, rh, port)
		if err := t.configureNIC(t.RouterHost, port, netip.PrefixFrom(SegmentRouterAddr(i), SegmentPrefix(i).Bits())); err != nil {
			return err
		}
		if err := t.configureNIC(h, NICName, netip.PrefixFrom(h.Addr, h.Segment.Bits())); err != nil {
			return err
		}
		if err := t.addRoute(h, Pool, h.Router); err != nil {
			return err
		}
	}
	return t.RouteEndpoints(EndpointSubnets)
}

func (t *Topology) newHost(i int, addr netip.Addr, segment netip.Prefix, router netip.Addr) (*Host, error) {
	name := fmt.Sprintf("h%d", i)
	ns, handle, err := t.NewNamespace(name)
	if err != nil {
		return nil, err
	}
	if err := t.forward(ns); err != nil {
		return nil, err
	}
	h := &Host{Index: i, Name: name, NS: ns, Addr: addr, Segment: segment, Router: router, Handle: handle}
	t.Hosts = append(t.Hosts, h)
	return h, nil
}

// wire creates a cable: a veth pair with end aName in namespace a (whose
// netlink handle is ah) and end bName in namespace b.
//
// Equivalent to: ip -n A link add ANAME type veth peer name BNAME netns B
func (t *Topology) wire(ah *netlink.Handle, a *netns.NS, aName string, b *netns.NS, bName string) error {
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: aName, MTU: t.MTU()},
		PeerName:      bName,
		PeerNamespace: netlink.NsFd(int(b.Handle())),
	}
	if err := ah.LinkAdd(veth); err != nil {
		return fmt.Errorf("create wire %s/%s <-> %s/%s: %w", a.Name, aName, b.Name, bName, err)
	}
	return nil
}

func setUpByName(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find %s: %w", name, err)
	}
	return netlink.LinkSetUp(l)
}

// addRoute adds a route to dst via gw in host h, in each of the
// topology's families.
//
// Equivalent to: ip route add DST via GW
func (t *Topology) addRoute(h *Host, dst netip.Prefix, gw netip.Addr) error {
	return t.Family().AddRoute(h.Handle, h.NS.Name, Route{Dst: dst, Gw: gw})
}

// forward makes ns a router for the topology's families.
//
// Equivalent to: ip netns exec NS sysctl -w net.ipv4.ip_forward=1
// (net.ipv6.conf.all.forwarding=1 with IPv6)
func (t *Topology) forward(ns *netns.NS) error {
	if err := ns.Sysctl("net.ipv4.ip_forward", "1"); err != nil {
		return err
	}
	return t.Family().PrepareNamespace(ns, true)
}

// configureNIC addresses a NIC, brings it up and applies the rate limit.
//
// Equivalent to: ip addr add ADDR dev NIC; ip link set NIC up;
// tc qdisc add dev NIC root tbf rate R burst B limit L
func (t *Topology) configureNIC(h *Host, name string, addr netip.Prefix) error {
	nic, err := h.Handle.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", name, h.NS.Name, err)
	}
	if err := t.Family().AddAddress(h.Handle, h.NS.Name, nic, addr, netlink.SCOPE_UNIVERSE); err != nil {
		return err
	}
	if err := h.Handle.LinkSetUp(nic); err != nil {
		return fmt.Errorf("set %s up in %q: %w", name, h.NS.Name, err)
	}
	if t.Opts.NICRateBPS > 0 {
		if err := setRate(h.Handle, nic, t.Opts.NICRateBPS); err != nil {
			return fmt.Errorf("rate-limit %s in %q: %w", name, h.NS.Name, err)
		}
	}
	return nil
}

// setRate installs a token bucket on the link's egress. The bucket holds
// at least 10 ms at the rate and at least one 64 KiB GSO segment, so
// offloaded segments pass whole; the queue holds another 50 ms.
func setRate(h *netlink.Handle, link netlink.Link, bitsPerSecond int64) error {
	rate := uint64(bitsPerSecond / 8)
	burst := max(rate/100, 64*1024+1024)
	tbf := &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: link.Attrs().Index,
			Handle:    netlink.MakeHandle(1, 0),
			Parent:    netlink.HANDLE_ROOT,
		},
		Rate:   rate,
		Buffer: netlink.Xmittime(rate, uint32(burst)),
		Limit:  uint32(rate/20 + burst),
	}
	return h.QdiscAdd(tbf)
}

func ipNet(p netip.Prefix) *net.IPNet {
	bits := 32
	if p.Addr().Is6() {
		bits = 128
	}
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), bits)}
}

// IPNet converts a prefix for netlink.
func IPNet(p netip.Prefix) *net.IPNet { return ipNet(p) }
