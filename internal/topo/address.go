package topo

import (
	"net/netip"

	"cnbench/internal/model"
)

// cnbench numbers everything from 198.18.0.0/15, the range RFC 2544
// reserves for benchmarking, so no address it assigns can be confused with
// a real network's.
//
//	198.18.0.0/16   the underlay: host i's NIC is 198.18.0.i; endpoints
//	                that sit directly on the wire are 198.18.i.n
//	198.19.i.0/24   the endpoints behind host i; the host's side, the
//	                endpoints' gateway, is 198.19.i.254
//	198.19.240.0/20 the overlay: one subnet across hosts; host i's
//	                endpoints are 198.19.(240+i).n
//
// The routed topology splits the underlay into one segment per host:
// 198.18.i.0/24, where host i's NIC is 198.18.i.253 and the router's
// interface, the segment's gateway, is 198.18.i.254.
//
// Which of these a mode's endpoints take is a fact of its row in the mode
// table (package modes), an Addressing.
var (
	Pool         = netip.MustParsePrefix("198.18.0.0/15")
	UnderlayBits = 16
)

// HostAddr is host i's NIC address on the underlay.
func HostAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, 0, byte(i)}) }

// WireAddr is the n-th address on host i's side of the underlay, for
// endpoints that share the wire with their host.
func WireAddr(host, n int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, byte(host), byte(n)}) }

// EndpointSubnet is the subnet of the endpoints behind host i.
func EndpointSubnet(host int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, byte(host), 0}), 24)
}

// EndpointAddr is the n-th endpoint address behind host i.
func EndpointAddr(host, n int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 19, byte(host), byte(n)})
}

// Gateway is host i's own address on its endpoint subnet.
func Gateway(host int) netip.Addr { return netip.AddrFrom4([4]byte{198, 19, byte(host), 254}) }

// SegmentPrefix is host i's segment in the routed topology.
func SegmentPrefix(host int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(host), 0}), 24)
}

// SegmentHostAddr is host i's NIC address on its routed segment.
func SegmentHostAddr(host int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, byte(host), 253}) }

// SegmentRouterAddr is the router's address on host i's segment.
func SegmentRouterAddr(host int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 18, byte(host), 254})
}

// OverlaySubnet is the one subnet overlay endpoints share across hosts.
var OverlaySubnet = netip.MustParsePrefix("198.19.240.0/20")

// OverlayAddr is the n-th overlay endpoint address of host i.
func OverlayAddr(host, n int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 19, byte(240 + host), byte(n)})
}

// MaxEndpointsPerHost bounds n in EndpointAddr and WireAddr.
const MaxEndpointsPerHost = model.MaxEndpointsPerHost

// SharesHost reports whether a topology of this kind puts its servers and
// clients on one host (or guest), whose endpoints they then all are.
func SharesHost(kind string) bool {
	l, ok := vmLayouts[kind]
	return kind == CHC || (ok && l.server == l.client)
}

// Addressing is where a mode's endpoints take their addresses from.
type Addressing string

// The kinds of addressing in the plan above.
const (
	// HostAddresses: the endpoint is its host and has the host's address.
	HostAddresses Addressing = "host"
	// WireAddresses: 198.18.i.n, on the host's underlay segment.
	WireAddresses Addressing = "wire"
	// SubnetAddresses: 198.19.i.n, behind host i.
	SubnetAddresses Addressing = "subnet"
	// OverlayAddresses: 198.19.(240+i).n, in the subnet across hosts.
	OverlayAddresses Addressing = "overlay"
	// ExternalAddresses: numbered by others (a cluster's own networks),
	// outside the plan.
	ExternalAddresses Addressing = "external"
)

// Contains reports whether addr is one an endpoint on host h may have
// under a; external addresses are anything.
func (a Addressing) Contains(h *Host, addr netip.Addr) bool {
	switch a {
	case HostAddresses:
		return addr == h.Addr
	case WireAddresses:
		return h.Segment.Contains(addr)
	case SubnetAddresses:
		return EndpointSubnet(h.Index).Contains(addr)
	case OverlayAddresses:
		return OverlaySubnet.Contains(addr)
	}
	return a == ExternalAddresses
}
