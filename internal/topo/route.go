package topo

import "net/netip"

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
	type machine struct {
		index int
		addr  netip.Addr
	}
	var machines []machine
	for _, h := range append(append([]*Host(nil), t.Hosts...), t.Guests...) {
		machines = append(machines, machine{h.Index, h.Addr})
	}
	for _, p := range t.Peers {
		machines = append(machines, machine{peerIndex(p), p})
	}
	for _, h := range t.Hosts {
		for _, m := range machines {
			if m.index == h.Index {
				continue
			}
			via := m.addr
			if h.Router.IsValid() {
				via = h.Router
			}
			for _, dst := range subnets(m.index) {
				if err := addRoute(h, dst, via); err != nil {
					return err
				}
			}
		}
		if t.RouterHost != nil {
			for _, dst := range subnets(h.Index) {
				if err := addRoute(t.RouterHost, dst, h.Addr); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// LastIndex is the highest host index of the topology, across this
// machine's hosts, its guests and the hosts of other machines.
func (t *Topology) LastIndex() int {
	last := 0
	for _, h := range append(append([]*Host(nil), t.Hosts...), t.Guests...) {
		last = max(last, h.Index)
	}
	for _, p := range t.Peers {
		last = max(last, peerIndex(p))
	}
	return last
}

// peerIndex is the index of the host whose NIC address is HostAddr(index).
func peerIndex(addr netip.Addr) int { return int(addr.As4()[3]) }
