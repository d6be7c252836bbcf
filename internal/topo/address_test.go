package topo

import (
	"net/netip"
	"testing"
)

// TestAddressPlanHoldsEveryHostsEndpoints numbers every endpoint every
// host can hold, behind it and on the wire, and requires each address to
// be distinct, in the host's own subnets with its gateway beside it, and
// clear of every other part of the plan.
func TestAddressPlanHoldsEveryHostsEndpoints(t *testing.T) {
	for _, tc := range []struct {
		host, n int
		want    string
	}{
		{1, 1, "198.19.1.1"}, {1, 250, "198.19.1.250"}, {1, 251, "198.19.96.1"}, {1, 1250, "198.19.99.232"},
		{2, 251, "198.19.100.1"}, {8, 1250, "198.19.127.232"}, {9, 250, "198.19.9.250"},
	} {
		if got := EndpointAddr(tc.host, tc.n); got.String() != tc.want {
			t.Errorf("EndpointAddr(%d, %d) = %s, want %s", tc.host, tc.n, got, tc.want)
		}
	}
	if HostCapacity(1) != 1250 || HostCapacity(ExtendedHosts) != 1250 || HostCapacity(ExtendedHosts+1) != 250 {
		t.Errorf("capacities %d, %d, %d", HostCapacity(1), HostCapacity(ExtendedHosts), HostCapacity(ExtendedHosts+1))
	}
	// Parts of the plan endpoints must stay out of.
	reserved := []netip.Prefix{OverlaySubnet, netip.MustParsePrefix("198.19.128.0/18")} // the overlay; dockerd's pools
	for h := 1; h <= MaxHosts; h++ {
		reserved = append(reserved, SegmentPrefix(h)) // routed segments, and hosts' wire /24s
	}
	seen := map[netip.Addr]string{}
	claim := func(a netip.Addr, what string) {
		if prev, ok := seen[a]; ok {
			t.Fatalf("%s is both %s and %s", a, prev, what)
		}
		seen[a] = what
	}
	for h := 1; h <= MaxHosts; h++ {
		claim(HostAddr(h), "a NIC")
		for _, gw := range Gateways(h) {
			claim(gw.Addr(), "a gateway")
		}
	}
	for h := 1; h <= MaxHosts; h++ {
		for n := 1; n <= HostCapacity(h); n++ {
			addr, prefix, gw := EndpointAddr(h, n), EndpointPrefix(h, n), EndpointGateway(h, n)
			claim(addr, "an endpoint")
			if n <= BaseEndpointsPerHost && OverlayAddresses.Contains(nil, OverlayAddr(h, n)) {
				claim(OverlayAddr(h, n), "an overlay endpoint")
			}
			if prefix.Addr() != addr || !prefix.Masked().Contains(gw) || !SubnetAddresses.Contains(&Host{Index: h}, addr) {
				t.Fatalf("endpoint %d of host %d: %s with gateway %s", n, h, prefix, gw)
			}
			if n > BaseEndpointsPerHost {
				for _, r := range reserved {
					if r.Contains(addr) {
						t.Fatalf("endpoint %d of host %d, %s, is in %s", n, h, addr, r)
					}
				}
			}
			for other := 1; other <= MaxHosts; other++ {
				if other != h && SubnetAddresses.Contains(&Host{Index: other}, addr) {
					t.Fatalf("endpoint %d of host %d, %s, is in host %d's subnets", n, h, addr, other)
				}
			}
			wire := WireAddr(h, n)
			claim(wire, "a wire endpoint")
			if !netip.MustParsePrefix("198.18.0.0/16").Contains(wire) {
				t.Fatalf("wire endpoint %d of host %d, %s, is off the underlay", n, h, wire)
			}
			if n > BaseEndpointsPerHost {
				for _, r := range reserved {
					if r.Contains(wire) {
						t.Fatalf("wire endpoint %d of host %d, %s, is in %s", n, h, wire, r)
					}
				}
			}
		}
	}
}
