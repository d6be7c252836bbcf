// Package nstest makes network namespaces for tests, and the traffic
// they send through them; apart from testutil, which package netns's own
// tests use.
package nstest

import (
	"io"
	"net"
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

// Echo answers every byte each connection to ln sends with one byte,
// until ln is closed.
func Echo(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			buf := make([]byte, 1)
			for {
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		}()
	}
}

// RoundTrip sends one byte on c and waits for Echo's answer.
func RoundTrip(c net.Conn) error {
	buf := []byte{1}
	if _, err := c.Write(buf); err != nil {
		return err
	}
	_, err := io.ReadFull(c, buf)
	return err
}
