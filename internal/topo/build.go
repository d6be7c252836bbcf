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
// subnets, as two directly cabled machines with static routes.
func Build(kind string, token netns.Token, opts Options) (t *Topology, err error) {
	t = &Topology{Kind: kind, Token: token, Opts: opts}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close())
			t = nil
		}
	}()
	var hosts int
	switch kind {
	case CHC:
		hosts = 1
	case CHHC:
		hosts = 2
	default:
		return nil, fmt.Errorf("build topology: unknown topology %q", kind)
	}
	for i := 1; i <= hosts; i++ {
		h, err := t.newHost(i)
		if err != nil {
			return nil, err
		}
		t.Hosts = append(t.Hosts, h)
	}
	if hosts == 1 {
		stub, _, err := t.NewNamespace("w")
		if err != nil {
			return nil, err
		}
		if err := t.wire(t.Hosts[0], stub, true); err != nil {
			return nil, err
		}
	} else {
		if err := t.wire(t.Hosts[0], t.Hosts[1].NS, false); err != nil {
			return nil, err
		}
	}
	for _, h := range t.Hosts {
		if err := t.configureNIC(h); err != nil {
			return nil, err
		}
	}
	return t, t.routeBetweenHosts()
}

func (t *Topology) newHost(i int) (*Host, error) {
	name := fmt.Sprintf("h%d", i)
	ns, handle, err := t.NewNamespace(name)
	if err != nil {
		return nil, err
	}
	if err := ns.Sysctl("net.ipv4.ip_forward", "1"); err != nil {
		return nil, err
	}
	return &Host{Index: i, Name: name, NS: ns, Addr: HostAddr(i), Handle: handle}, nil
}

// wire creates host a's NIC with its far end in namespace b, where it is
// named nic0 too. A stub end is brought up here, since no host configures it.
//
// Equivalent to: ip -n A link add nic0 type veth peer name nic0 netns B
func (t *Topology) wire(a *Host, b *netns.NS, stub bool) error {
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: NICName, MTU: t.MTU()},
		PeerName:      NICName,
		PeerNamespace: netlink.NsFd(int(b.Handle())),
	}
	if err := a.Handle.LinkAdd(veth); err != nil {
		return fmt.Errorf("create wire %s/%s <-> %s/%s: %w", a.NS.Name, NICName, b.Name, NICName, err)
	}
	if stub {
		return b.Do(func() error {
			l, err := netlink.LinkByName(NICName)
			if err != nil {
				return fmt.Errorf("find stub end of the wire: %w", err)
			}
			return netlink.LinkSetUp(l)
		})
	}
	return nil
}

// configureNIC addresses the NIC, brings it up and applies the rate limit.
//
// Equivalent to: ip addr add 198.18.0.I/16 dev nic0; ip link set nic0 up;
// tc qdisc add dev nic0 root tbf rate R burst B limit L
func (t *Topology) configureNIC(h *Host) error {
	nic, err := h.Handle.LinkByName(NICName)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", NICName, h.NS.Name, err)
	}
	addr := &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(h.Addr, UnderlayBits))}
	if err := h.Handle.AddrAdd(nic, addr); err != nil {
		return fmt.Errorf("address %s on %q: %w", h.Addr, h.NS.Name, err)
	}
	if err := h.Handle.LinkSetUp(nic); err != nil {
		return fmt.Errorf("set %s up in %q: %w", NICName, h.NS.Name, err)
	}
	if t.Opts.NICRateBPS > 0 {
		if err := setRate(h.Handle, nic, t.Opts.NICRateBPS); err != nil {
			return fmt.Errorf("rate-limit %s in %q: %w", NICName, h.NS.Name, err)
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

// routeBetweenHosts lets each host reach the endpoint subnets behind the
// others through their NICs, as a flat routed underlay does.
//
// Equivalent to: ip route add 198.19.J.0/24 via 198.18.0.J
func (t *Topology) routeBetweenHosts() error {
	for _, h := range t.Hosts {
		for _, other := range t.Hosts {
			if other == h {
				continue
			}
			route := &netlink.Route{
				Dst: ipNet(EndpointSubnet(other.Index)),
				Gw:  net.IP(other.Addr.AsSlice()),
			}
			if err := h.Handle.RouteAdd(route); err != nil {
				return fmt.Errorf("route %s via %s in %q: %w", EndpointSubnet(other.Index), other.Addr, h.NS.Name, err)
			}
		}
	}
	return nil
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
