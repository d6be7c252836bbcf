package topo

import (
	"net/netip"
	"slices"

	"cnbench/internal/model"
)

// cnbench numbers everything from 198.18.0.0/15, the range RFC 2544
// reserves for benchmarking, so no address it assigns can be confused with
// a real network's.
//
//	198.18.0.0/16   the underlay: host i's NIC is 198.18.0.i; endpoints
//	                that sit directly on the wire are 198.18.i.n
//	198.19.i.0/24   the endpoints behind host i (i = 1 to MaxHosts); the
//	                host's side, the endpoints' gateway, is 198.19.i.254
//	198.19.192.0/18 the overlay: one subnet across hosts; host i's
//	                endpoints are 198.19.(191+i).n
//
// The routed topology splits the underlay into one segment per host:
// 198.18.i.0/24, where host i's NIC is 198.18.i.253 and the router's
// interface, the segment's gateway, is 198.18.i.254.
//
// A host's first 250 endpoints are numbered as above. Hosts 1 to 8 hold
// 1000 more each in an extension block of their own, a /22 whose last
// /24's .254 is the host's gateway there:
//
//	198.19.(96+4(i-1)).0/22   behind host i: endpoints 251 to 1250
//	198.18.(96+4(i-1)).0/22   on host i's side of the underlay
//
// between the hosts' own /24s (1 to MaxHosts) and the pools of the
// dockerd that cnbench runs (198.19.128.0/18). An endpoint behind a host
// thus has one of two prefixes and gateways
// (EndpointPrefix, EndpointGateway), and the routes between hosts carry
// both (EndpointSubnets). Endpoints on the wire stay in the underlay's
// /16 either way.
//
// Which of these a mode's endpoints take is a fact of its row in the mode
// table (package modes), an Addressing.
var (
	Pool         = netip.MustParsePrefix("198.18.0.0/15")
	UnderlayBits = 16
)

// MaxHosts is the most hosts a topology holds: each numbers its endpoints
// in a /24 of its own below the extension blocks, and its overlay
// endpoints in one of the overlay's 64 /24s.
const MaxHosts = 64

// HostAddr is host i's NIC address on the underlay.
func HostAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, 0, byte(i)}) }

// The bounds of the plan: endpoints in a host's /24, hosts with an
// extension block, and endpoints such a host holds in all.
const (
	BaseEndpointsPerHost = model.BaseEndpointsPerHost
	ExtendedHosts        = 8
	extensionEndpoints   = model.MaxEndpointsPerHost - model.BaseEndpointsPerHost
	// extensionGateway is the gateway's place in an extension block:
	// .254 of its last /24.
	extensionGateway = 1022
	// extensionBase is the third octet of host 1's extension block.
	extensionBase = 96
)

// extension is the n-th address of host i's extension block in the /16
// whose second octet is second: the endpoint numbered
// BaseEndpointsPerHost+n, or the gateway at extensionGateway.
func extension(second byte, host, n int) netip.Addr {
	base := extensionBase + 4*(host-1)
	return netip.AddrFrom4([4]byte{198, second, byte(base + n/256), byte(n % 256)})
}

func extensionBlock(second byte, host int) netip.Prefix {
	return netip.PrefixFrom(extension(second, host, 0), 22)
}

// hasExtension reports whether host i has an extension block.
func hasExtension(host int) bool { return host >= 1 && host <= ExtendedHosts }

// extended reports whether endpoint n of host i lies in its extension
// block.
func extended(host, n int) bool { return n > BaseEndpointsPerHost && hasExtension(host) }

// HostCapacity is how many endpoints host i can number, extension block
// included.
func HostCapacity(host int) int {
	if hasExtension(host) {
		return BaseEndpointsPerHost + extensionEndpoints
	}
	return BaseEndpointsPerHost
}

// WireAddr is the n-th address on host i's side of the underlay, for
// endpoints that share the wire with their host.
func WireAddr(host, n int) netip.Addr {
	if extended(host, n) {
		return extension(18, host, n-BaseEndpointsPerHost)
	}
	return netip.AddrFrom4([4]byte{198, 18, byte(host), byte(n)})
}

// EndpointSubnet is the subnet of host i's first endpoints, whose gateway
// is Gateway(i).
func EndpointSubnet(host int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, byte(host), 0}), 24)
}

// EndpointSubnets are every subnet of the endpoints behind host i: its
// /24 and, for the hosts that have one, its extension block.
func EndpointSubnets(host int) []netip.Prefix {
	if hasExtension(host) {
		return []netip.Prefix{EndpointSubnet(host), extensionBlock(19, host)}
	}
	return []netip.Prefix{EndpointSubnet(host)}
}

// EndpointAddr is the n-th endpoint address behind host i.
func EndpointAddr(host, n int) netip.Addr {
	if extended(host, n) {
		return extension(19, host, n-BaseEndpointsPerHost)
	}
	return netip.AddrFrom4([4]byte{198, 19, byte(host), byte(n)})
}

// EndpointPrefix is endpoint n behind host i with the length of the
// subnet it is numbered in.
func EndpointPrefix(host, n int) netip.Prefix {
	subnet := EndpointSubnet(host)
	if extended(host, n) {
		subnet = extensionBlock(19, host)
	}
	return netip.PrefixFrom(EndpointAddr(host, n), subnet.Bits())
}

// Gateway is host i's own address on its first endpoint subnet.
func Gateway(host int) netip.Addr { return netip.AddrFrom4([4]byte{198, 19, byte(host), 254}) }

// EndpointGateway is the gateway of endpoint n behind host i: host i's own
// address in the subnet the endpoint is numbered in.
func EndpointGateway(host, n int) netip.Addr {
	if extended(host, n) {
		return extension(19, host, extensionGateway)
	}
	return Gateway(host)
}

// Gateways are host i's own addresses on each of its endpoint subnets,
// with the subnets' lengths.
func Gateways(host int) []netip.Prefix {
	out := []netip.Prefix{netip.PrefixFrom(Gateway(host), EndpointSubnet(host).Bits())}
	if hasExtension(host) {
		out = append(out, netip.PrefixFrom(EndpointGateway(host, BaseEndpointsPerHost+1), extensionBlock(19, host).Bits()))
	}
	return out
}

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
var OverlaySubnet = netip.MustParsePrefix("198.19.192.0/18")

// OverlayAddr is the n-th overlay endpoint address of host i.
func OverlayAddr(host, n int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 19, byte(191 + host), byte(n)})
}

// MaxEndpointsPerHost bounds n in EndpointAddr and WireAddr on any host.
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
	addr = To4(addr) // the IPv6 plan is the IPv4 plan's twin (family.go)
	switch a {
	case HostAddresses:
		return addr == h.Addr
	case WireAddresses:
		return h.Segment.Contains(addr) || (hasExtension(h.Index) && extensionBlock(18, h.Index).Contains(addr))
	case SubnetAddresses:
		return slices.ContainsFunc(EndpointSubnets(h.Index), func(p netip.Prefix) bool { return p.Contains(addr) })
	case OverlayAddresses:
		return OverlaySubnet.Contains(addr)
	}
	return a == ExternalAddresses
}
