package topo

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnbench/internal/model"
	"cnbench/internal/netns"
)

// Family is which IP versions a topology's addresses come in: IPv4 only,
// IPv6 only, or both (dual-stack), where traffic takes IPv6 as a
// dual-stack host prefers it (RFC 6724).
type Family string

// The families (model's names); the zero value is IPv4.
const (
	IPv4 Family = model.FamilyIPv4
	IPv6 Family = model.FamilyIPv6
	Dual Family = model.FamilyDual
)

// Families lists the families in the order docs and flags show them.
var Families = []Family{IPv4, IPv6, Dual}

// ParseFamily reads a family's name; empty is IPv4.
func ParseFamily(s string) (Family, error) {
	f, err := model.ParseFamily(s)
	return Family(f), err
}

// Has4 and Has6 report whether the family numbers in IPv4 and IPv6.
func (f Family) Has4() bool { return f != IPv6 }
func (f Family) Has6() bool { return model.FamilyHas6(string(f)) }

// The IPv6 plan is the IPv4 plan (address.go) written into the last 32
// bits of 2001:2::/96, inside 2001:2::/48, the range RFC 5180 reserves
// for benchmarking: 198.19.1.5 is 2001:2::c613:105, a /24 is a /120.
// Every rule of the IPv4 plan (which host, which subnet, which gateway)
// thus holds for IPv6 by the same numbers, and a mode need not know two
// plans.
var pool6 = netip.MustParsePrefix("2001:2::/96")

// To6 is the IPv6 form of a plan address; an IPv6 address is returned
// as it is.
func To6(a netip.Addr) netip.Addr {
	if !a.Is4() {
		return a
	}
	b := pool6.Addr().As16()
	v4 := a.As4()
	copy(b[12:], v4[:])
	return netip.AddrFrom16(b)
}

// To4 is the IPv4 form of a plan address: an address of the IPv6 plan
// gives its IPv4 twin; any other is returned as it is.
func To4(a netip.Addr) netip.Addr {
	if a.Is6() && pool6.Contains(a) {
		b := a.As16()
		return netip.AddrFrom4([4]byte(b[12:]))
	}
	return a
}

// Prefix6 is the IPv6 form of a plan prefix.
func Prefix6(p netip.Prefix) netip.Prefix {
	if !p.Addr().Is4() {
		return p
	}
	return netip.PrefixFrom(To6(p.Addr()), 96+p.Bits())
}

// Addrs are a plan address's forms in the family, IPv4 first.
func (f Family) Addrs(a netip.Addr) []netip.Addr {
	a = To4(a)
	var out []netip.Addr
	if f.Has4() {
		out = append(out, a)
	}
	if f.Has6() && a.Is4() {
		out = append(out, To6(a))
	}
	return out
}

// Prefixes are a plan prefix's forms in the family, IPv4 first.
func (f Family) Prefixes(p netip.Prefix) []netip.Prefix {
	if p.Addr().Is6() && pool6.Contains(p.Addr()) {
		p = netip.PrefixFrom(To4(p.Addr()), p.Bits()-96)
	}
	var out []netip.Prefix
	if f.Has4() {
		out = append(out, p)
	}
	if f.Has6() && p.Addr().Is4() {
		out = append(out, Prefix6(p))
	}
	return out
}

// Dial is the address traffic reaches a plan address at: its IPv6 form
// where the family has IPv6.
func (f Family) Dial(a netip.Addr) netip.Addr {
	if f.Has6() {
		return To6(a)
	}
	return To4(a)
}

// Loopback is the family's loopback address.
func (f Family) Loopback() netip.Addr {
	if f.Has6() {
		return netip.IPv6Loopback()
	}
	return netip.MustParseAddr("127.0.0.1")
}

// Family is the topology's address family; options that name none are
// IPv4.
func (t *Topology) Family() Family {
	if t.Opts.Family == "" {
		return IPv4
	}
	return t.Opts.Family
}

// PrepareNamespace readies a namespace cnbench made for the family: with
// IPv6, the links made in it from here on take their addresses without
// duplicate address detection and solicit no router, so an address is
// usable the moment it is added and the links send nothing of their own
// beyond the multicast listener reports the kernel always sends; routers
// (hosts) forward IPv6. Without IPv6, nothing.
//
// Equivalent to: ip netns exec NS sysctl -w net.ipv6.conf.default.accept_dad=0
// net.ipv6.conf.default.router_solicitations=0 net.ipv6.conf.default.accept_ra=0
// (and net.ipv6.conf.all.forwarding=1 on a router)
func (f Family) PrepareNamespace(ns *netns.NS, router bool) error {
	if !f.Has6() {
		return nil
	}
	settings := [][2]string{
		{"net.ipv6.conf.default.accept_dad", "0"},
		{"net.ipv6.conf.default.dad_transmits", "0"},
		{"net.ipv6.conf.default.router_solicitations", "0"},
		{"net.ipv6.conf.default.accept_ra", "0"},
	}
	if router {
		settings = append(settings, [2]string{"net.ipv6.conf.all.forwarding", "1"})
	}
	for _, s := range settings {
		if err := ns.Sysctl(s[0], s[1]); err != nil {
			return err
		}
	}
	return nil
}

// AddAddress puts a plan prefix on link in each of the family's forms;
// IPv6 without duplicate address detection (IFA_F_NODAD), so it is
// usable at once. scope is netlink's (0: global).
//
// Equivalent to: ip addr add ADDR/LEN dev LINK [scope SCOPE]; ip -6 addr
// add ADDR6/LEN6 dev LINK nodad
func (f Family) AddAddress(h *netlink.Handle, ns string, link netlink.Link, p netip.Prefix, scope netlink.Scope) error {
	for _, q := range f.Prefixes(p) {
		a := &netlink.Addr{IPNet: ipNet(q), Scope: int(scope)}
		if q.Addr().Is6() {
			a.Flags = unix.IFA_F_NODAD
			a.Scope = int(netlink.SCOPE_UNIVERSE)
		}
		if err := h.AddrAdd(link, a); err != nil {
			return fmt.Errorf("address %s on %s in %q: %w", q, link.Attrs().Name, ns, err)
		}
	}
	return nil
}

// Route is a route of the plan, in IPv4 terms; AddRoute adds it in each
// of the family's forms. A zero Dst is the default route; Link 0 leaves
// the device to the gateway.
type Route struct {
	Link   int
	Dst    netip.Prefix
	Gw     netip.Addr
	Src    netip.Addr
	OnLink bool // scope link: the destination is on the link itself
}

// AddRoute adds r in each of the family's forms.
//
// Equivalent to: ip route add DST [via GW] [dev LINK] [scope link] [src
// SRC]; ip -6 route add DST6 [via GW6] [dev LINK] [src SRC6]
func (f Family) AddRoute(h *netlink.Handle, ns string, r Route) error {
	for _, v6 := range f.versions() {
		route := &netlink.Route{LinkIndex: r.Link}
		if r.Dst.IsValid() {
			route.Dst = ipNet(pick(f, v6, r.Dst))
		} else if v6 {
			route.Dst = ipNet(netip.PrefixFrom(netip.IPv6Unspecified(), 0))
		}
		if r.Gw.IsValid() {
			route.Gw = net.IP(AddrIn(v6, r.Gw).AsSlice())
		}
		if r.Src.IsValid() {
			route.Src = net.IP(AddrIn(v6, r.Src).AsSlice())
		}
		if r.OnLink && !v6 {
			route.Scope = netlink.SCOPE_LINK
		}
		if err := h.RouteAdd(route); err != nil {
			return fmt.Errorf("route %s in %q: %w", route, ns, err)
		}
	}
	return nil
}

// PinNeighbour enters a plan address at mac on link, through handle h in
// the namespace named ns, for good, in each of the family's forms (ARP
// and neighbour discovery): a permanent entry, which the kernel's bound
// on its neighbour tables (gc_thresh3) does not count.
//
// Equivalent to: ip -n NS neigh replace IP lladdr MAC dev LINK nud
// permanent; ip -n NS -6 neigh replace IP6 lladdr MAC dev LINK nud permanent
func (f Family) PinNeighbour(h *netlink.Handle, ns string, link netlink.Link, ip netip.Addr, mac net.HardwareAddr) error {
	for _, a := range f.Addrs(ip) {
		fam := netlink.FAMILY_V4
		if a.Is6() {
			fam = netlink.FAMILY_V6
		}
		entry := &netlink.Neigh{LinkIndex: link.Attrs().Index, Family: fam, State: netlink.NUD_PERMANENT,
			IP: net.IP(a.AsSlice()), HardwareAddr: mac}
		if err := h.NeighSet(entry); err != nil {
			return fmt.Errorf("neighbour %s on %s in %q: %w", a, link.Attrs().Name, ns, err)
		}
	}
	return nil
}

// versions are the IP versions the family numbers in: false for IPv4,
// true for IPv6.
func (f Family) versions() []bool {
	var out []bool
	if f.Has4() {
		out = append(out, false)
	}
	if f.Has6() {
		out = append(out, true)
	}
	return out
}

func pick(f Family, v6 bool, p netip.Prefix) netip.Prefix {
	for _, q := range f.Prefixes(p) {
		if q.Addr().Is6() == v6 {
			return q
		}
	}
	return p
}

// AddrIn is a plan address in its IPv6 (v6) or IPv4 form.
func AddrIn(v6 bool, a netip.Addr) netip.Addr {
	if v6 {
		return To6(a)
	}
	return To4(a)
}

// pinWires makes every two interfaces of the topology's own namespaces
// that share an IPv6 subnet of the plan (hosts on one wire, a host and
// its router, a leaf and the spine) known to each other for good, so the
// first packet between them waits for no neighbour discovery. Right after
// a link comes up, the kernel's first solicitation went unanswered and
// the first packet waited for the next one, a second later (two freshly
// cabled namespaces: 2,027 ms for the first echo, 0.4 ms once the links
// had been up a second). IPv4's ARP has no such wait and keeps it.
//
// Equivalent to, for each such pair: ip -n A -6 neigh replace ADDR(B)
// lladdr MAC(B) dev LINK(A) nud permanent, and the same the other way
func (t *Topology) pinWires() error {
	ports, err := t.ipv6Ports()
	if err != nil {
		return err
	}
	for _, a := range ports {
		for _, b := range ports {
			if a.ns == b.ns || !a.prefix.Masked().Contains(b.prefix.Addr()) {
				continue
			}
			if err := IPv6.PinNeighbour(a.handle, a.ns, a.link, b.prefix.Addr(), b.link.Attrs().HardwareAddr); err != nil {
				return err
			}
		}
	}
	return nil
}

// AwaitIPv6 waits until every IPv6 address of the plan in the
// topology's namespaces, endpoints' included, is the kernel's own: its
// local route in place. The kernel adds that route from a work queue
// some time after the address and its link come up, even without
// duplicate address detection; a connection made before it was routed
// out of the NIC toward nobody, and a SYN that arrived before it was
// dropped ("Ip6InNoRoutes"): in one build of host/chc/dual out of 150 a
// connection to the host's own address timed out after 3 s, and across
// hosts first SYNs waited a second. Without IPv6, nothing.
func (t *Topology) AwaitIPv6() error {
	ports, err := t.ipv6Ports()
	if err != nil {
		return err
	}
	return awaitLocal(ports)
}

// ipv6Port is an address of the IPv6 plan on a link of one of the
// topology's namespaces.
type ipv6Port struct {
	handle *netlink.Handle
	ns     string
	link   netlink.Link
	prefix netip.Prefix
}

// ipv6Ports lists the addresses of the IPv6 plan in the topology's
// namespaces; none where its family has no IPv6.
func (t *Topology) ipv6Ports() ([]ipv6Port, error) {
	if !t.Family().Has6() {
		return nil, nil
	}
	var ports []ipv6Port
	t.mu.Lock()
	namespaces, handles := slices.Clone(t.namespaces), slices.Clone(t.handles)
	t.mu.Unlock()
	for i, h := range handles {
		links, err := h.LinkList()
		if err != nil {
			return nil, fmt.Errorf("links in %q: %w", namespaces[i].Name, err)
		}
		for _, l := range links {
			addrs, err := h.AddrList(l, netlink.FAMILY_V6)
			if err != nil {
				return nil, fmt.Errorf("addresses of %s in %q: %w", l.Attrs().Name, namespaces[i].Name, err)
			}
			for _, a := range addrs {
				ip, ok := netip.AddrFromSlice(a.IP)
				bits, _ := a.Mask.Size()
				if ok && pool6.Contains(ip) {
					ports = append(ports, ipv6Port{h, namespaces[i].Name, l, netip.PrefixFrom(ip, bits)})
				}
			}
		}
	}
	return ports, nil
}

// awaitLocalFor bounds how long an address may take to become the
// kernel's own.
const awaitLocalFor = 3 * time.Second

// awaitLocal waits until the kernel routes each port's address to
// itself.
//
// Equivalent to: until ip -n NS -6 route get ADDR | grep -q ^local; do sleep 0.001; done
func awaitLocal(ports []ipv6Port) error {
	deadline := time.Now().Add(awaitLocalFor)
	for _, p := range ports {
		for {
			routes, err := p.handle.RouteGet(net.IP(p.prefix.Addr().AsSlice()))
			if err == nil && len(routes) > 0 && routes[0].Type == unix.RTN_LOCAL {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("address %s on %s in %q is not the kernel's own after %v (%v)", p.prefix.Addr(), p.link.Attrs().Name, p.ns, awaitLocalFor, err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return nil
}
