// Package nstest makes network namespaces for tests; apart from testutil,
// which package netns's own tests use.
package nstest

import (
	"testing"

	"github.com/vishvananda/netlink"

	"cnbench/internal/netns"
)

// VethPair makes two fresh namespaces joined by a veth pair, "v0" in a
// with 198.18.200.1/30 and "v1" in b with 198.18.200.2/30, both up; the
// test's cleanup removes them.
func VethPair(t testing.TB) (a, b *netns.NS) {
	t.Helper()
	tok := netns.NewToken()
	var err error
	if a, err = netns.Create(tok.Name("a")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Delete() })
	if b, err = netns.Create(tok.Name("b")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Delete() })
	ha, err := netlink.NewHandleAt(a.Handle())
	if err != nil {
		t.Fatal(err)
	}
	defer ha.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "v0"}, PeerName: "v1", PeerNamespace: netlink.NsFd(int(b.Handle()))}
	if err := ha.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	hb, err := netlink.NewHandleAt(b.Handle())
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Close()
	for _, side := range []struct {
		h    *netlink.Handle
		name string
		addr string
	}{{ha, "v0", "198.18.200.1/30"}, {hb, "v1", "198.18.200.2/30"}} {
		l, err := side.h.LinkByName(side.name)
		if err != nil {
			t.Fatal(err)
		}
		addr, _ := netlink.ParseAddr(side.addr)
		if err := side.h.AddrAdd(l, addr); err != nil {
			t.Fatal(err)
		}
		if err := side.h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	return a, b
}
