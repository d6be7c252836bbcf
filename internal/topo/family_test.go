package topo

import (
	"net/netip"
	"slices"
	"testing"
)

// TestIPv6PlanIsTheIPv4PlansTwin writes plan addresses and prefixes into
// 2001:2::/96 and back, by hand, and lists each family's forms.
func TestIPv6PlanIsTheIPv4PlansTwin(t *testing.T) {
	a4 := netip.MustParseAddr("198.19.1.5")
	a6 := netip.MustParseAddr("2001:2::c613:105")
	if To6(a4) != a6 || To4(a6) != a4 || To6(a6) != a6 || To4(a4) != a4 {
		t.Errorf("198.19.1.5 <-> %s <-> %s", To6(a4), To4(a6))
	}
	// An IPv6 address outside the plan is no twin of anything.
	if other := netip.MustParseAddr("fe80::c613:105"); To4(other) != other {
		t.Errorf("To4(fe80::c613:105) = %s", To4(other))
	}
	p4 := netip.MustParsePrefix("198.19.1.0/24")
	p6 := netip.MustParsePrefix("2001:2::c613:100/120")
	if Prefix6(p4) != p6 {
		t.Errorf("Prefix6(%s) = %s, want %s", p4, Prefix6(p4), p6)
	}
	if !netip.MustParsePrefix("2001:2::/48").Contains(To6(netip.MustParseAddr("198.18.255.255"))) {
		t.Error("the plan leaves RFC 5180's 2001:2::/48")
	}
	for _, c := range []struct {
		f      Family
		addrs  []netip.Addr
		prefix []netip.Prefix
		dial   netip.Addr
	}{
		{IPv4, []netip.Addr{a4}, []netip.Prefix{p4}, a4},
		{IPv6, []netip.Addr{a6}, []netip.Prefix{p6}, a6},
		{Dual, []netip.Addr{a4, a6}, []netip.Prefix{p4, p6}, a6},
	} {
		// Either form of an address names the same plan address.
		for _, in := range []netip.Addr{a4, a6} {
			if got := c.f.Addrs(in); !slices.Equal(got, c.addrs) {
				t.Errorf("%s.Addrs(%s) = %v, want %v", c.f, in, got, c.addrs)
			}
			if got := c.f.Dial(in); got != c.dial {
				t.Errorf("%s.Dial(%s) = %s, want %s", c.f, in, got, c.dial)
			}
		}
		for _, in := range []netip.Prefix{p4, p6} {
			if got := c.f.Prefixes(in); !slices.Equal(got, c.prefix) {
				t.Errorf("%s.Prefixes(%s) = %v, want %v", c.f, in, got, c.prefix)
			}
		}
	}
	for _, s := range []string{"", "ipv4"} {
		if f, err := ParseFamily(s); err != nil || f != IPv4 {
			t.Errorf("ParseFamily(%q) = %q, %v", s, f, err)
		}
	}
	if _, err := ParseFamily("ipv5"); err == nil {
		t.Error("ParseFamily(ipv5) took it")
	}
}
