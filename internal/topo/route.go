package topo

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	"cnbench/internal/netns"
)

// RouteEndpoints routes every machine's endpoint subnets, as subnets names
// them for each host index, from each host this topology holds: straight
// to the machine's NIC where the hosts share a segment, through the
// router where each host has its own, and from the router to each host.
// Guests keep the routes they booted with.
//
// Equivalent to, on each host I for each other machine J:
//
//	ip -n hI route add SUBNET(J) via NIC(J)        (one segment)
//	ip -n hI route add SUBNET(J) via ROUTER(I)     (routed)
//	ip -n rtr route add SUBNET(I) via NIC(I)
func (t *Topology) RouteEndpoints(subnets func(host int) []netip.Prefix) error {
	machines := t.Machines()
	for _, h := range t.Hosts {
		for _, m := range machines {
			if m.Index == h.Index {
				continue
			}
			via := m.Addr
			if h.Router.IsValid() {
				via = h.Router
			}
			for _, dst := range subnets(m.Index) {
				if err := t.addRoute(h, dst, via); err != nil {
					return err
				}
			}
		}
		if t.RouterHost != nil {
			for _, dst := range subnets(h.Index) {
				if err := t.addRoute(t.RouterHost, dst, h.Addr); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Machine is one host of a topology as the others reach it: its index
// and its underlay address.
type Machine struct {
	Index int
	Addr  netip.Addr
}

// Machines are every host of the topology: this machine's hosts, its
// guests, and the hosts of other machines (Peers).
func (t *Topology) Machines() []Machine {
	var out []Machine
	for _, h := range append(append([]*Host(nil), t.Hosts...), t.Guests...) {
		out = append(out, Machine{h.Index, h.Addr})
	}
	for _, p := range t.Peers {
		out = append(out, Machine{peerIndex(p), p})
	}
	return out
}

// Others are the topology's hosts other than h, as h reaches them.
func (t *Topology) Others(h *Host) []Machine {
	var out []Machine
	for _, m := range t.Machines() {
		if m.Index != h.Index {
			out = append(out, m)
		}
	}
	return out
}

// LastIndex is the highest host index of the topology, across this
// machine's hosts, its guests and the hosts of other machines.
func (t *Topology) LastIndex() int {
	last := 0
	for _, m := range t.Machines() {
		last = max(last, m.Index)
	}
	return last
}

// peerIndex is the index of the host whose NIC address is HostAddr(index).
func peerIndex(addr netip.Addr) int { return int(addr.As4()[3]) }

// routerPort is the router's side of a host's cable: the port name in the
// router's namespace.
type routerPort struct {
	handle *netlink.Handle
	ns     *netns.NS
	name   string
}

// cabledTo records that host i's NIC is cabled to port name of the router
// whose namespace and handle are given.
func (t *Topology) cabledTo(i int, ns *netns.NS, h *netlink.Handle, name string) {
	if t.routerPorts == nil {
		t.routerPorts = map[int]routerPort{}
	}
	t.routerPorts[i] = routerPort{handle: h, ns: ns, name: name}
}

// PinAtRouter makes an endpoint on host h's routed segment, at addr with
// mac, known for good to the router at the other end of h's cable, and
// returns the MAC of that router's port for the endpoint's own entry; nil
// where h's NIC is not cabled to a router. A router resolving a thousand
// endpoints and each of them the router would overflow the kernel's one
// ARP table (see mode.Acquainter); permanent entries do not count.
//
// Equivalent to: ip -n ROUTER neigh replace ADDR lladdr MAC dev nicI nud permanent
func (t *Topology) PinAtRouter(h *Host, addr netip.Addr, mac net.HardwareAddr) (net.HardwareAddr, error) {
	p, ok := t.routerPorts[h.Index]
	if !ok {
		return nil, nil
	}
	port, err := p.handle.LinkByName(p.name)
	if err != nil {
		return nil, fmt.Errorf("find %s in %q: %w", p.name, p.ns.Name, err)
	}
	if err := t.Family().PinNeighbour(p.handle, p.ns.Name, port, addr, mac); err != nil {
		return nil, err
	}
	return port.Attrs().HardwareAddr, nil
}
