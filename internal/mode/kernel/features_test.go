package kernel

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnbench/internal/mode"
	"cnbench/internal/mode/modetest"
	"cnbench/internal/netns"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
)

// features reads a link's ethtool features inside a namespace.
func features(t *testing.T, ns *netns.NS, link string) map[string]bool {
	t.Helper()
	var f map[string]bool
	if err := ns.Do(func() error {
		e, err := ethtool.NewEthtool()
		if err != nil {
			return err
		}
		defer e.Close()
		f, err = e.Features(link)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return f
}

func requireMode(t *testing.T, name, kind string) mode.Descriptor {
	t.Helper()
	testutil.RequireRoot(t)
	var d mode.Descriptor
	for _, row := range Rows {
		if row.Name == name {
			d = row
		}
	}
	if err := d.Check(kind); err != nil {
		t.Skipf("skipped: %v", err)
	}
	return d
}

// TestOverlayMTU sends the largest datagram the overlay's MTU allows, with
// fragmentation forbidden, across hosts with jumbo frames: it must arrive
// whole, and one byte more must be refused at the sender, not fragmented.
func TestOverlayMTU(t *testing.T) {
	d := requireMode(t, Overlay, topo.CHHC)
	tp, m := modetest.Build(t, d, topo.CHHC, topo.Options{MTU: 9000})
	server, client := modetest.Pair(t, tp, m)
	const want = 9000 - vxlanOverhead
	for _, ep := range []*topo.Endpoint{server, client} {
		var mtu int
		_ = ep.NS.Do(func() error {
			l, err := netlink.LinkByName(endpointIfName)
			if err == nil {
				mtu = l.Attrs().MTU
			}
			return err
		})
		if mtu != want {
			t.Errorf("%s: eth0 MTU %d, want %d", ep.Name, mtu, want)
		}
	}
	var pc net.PacketConn
	if err := server.NS.Do(func() (err error) {
		pc, err = net.ListenPacket("udp4", netip.AddrPortFrom(server.Addr, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var conn *net.UDPConn
	if err := client.NS.Do(func() error {
		c, err := net.DialUDP("udp4", nil, pc.LocalAddr().(*net.UDPAddr))
		conn = c
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw, _ := conn.SyscallConn()
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	})
	payload := want - 20 - 8
	if _, err := conn.Write(make([]byte, payload+1)); !errors.Is(err, syscall.EMSGSIZE) {
		t.Errorf("a datagram one byte over the overlay MTU: %v, want EMSGSIZE", err)
	}
	buf := make([]byte, 65536)
	for try := 0; ; try++ {
		if _, err := conn.Write(make([]byte, payload)); err != nil {
			t.Fatal(err)
		}
		_ = pc.SetReadDeadline(time.Now().Add(time.Second))
		n, _, err := pc.ReadFrom(buf)
		if err == nil {
			if n != payload {
				t.Fatalf("received %d bytes, want %d", n, payload)
			}
			return
		}
		// The first datagram may go while the VTEPs learn each other.
		if try == 2 {
			t.Fatalf("a %d-byte datagram did not cross the overlay: %v", payload, err)
		}
	}
}

// TestOffloadsApplied switches every offload off and then on across a
// topology and reads the result back from the kernel.
func TestOffloadsApplied(t *testing.T) {
	d := requireMode(t, Bridge, topo.CHHC)
	for _, v := range []string{"off", "on"} {
		o := topo.Offloads{GRO: v, GSO: v, TSO: v, TxChecksum: v}
		tp, m := modetest.Build(t, d, topo.CHHC, topo.Options{Offloads: o})
		server, err := m.Endpoint(tp.HostFor(true), "s1")
		if err != nil {
			t.Fatal(err)
		}
		if err := tp.ApplyOffloads(); err != nil {
			t.Fatal(err)
		}
		for _, at := range []struct {
			ns   *netns.NS
			link string
		}{{tp.Hosts[0].NS, topo.NICName}, {tp.Hosts[1].NS, topo.NICName}, {tp.Hosts[0].NS, "v-s1"}, {server.NS, endpointIfName}} {
			f := features(t, at.ns, at.link)
			for _, name := range []string{"rx-gro", "tx-generic-segmentation", "tx-tcp-segmentation", "tx-checksum-ip-generic"} {
				if f[name] != (v == "on") {
					t.Errorf("%s in %s: %s is %v, want %s", at.link, at.ns.Name, name, f[name], v)
				}
			}
		}
	}
}

// TestOVSUserspaceChecksumOff checks that the userspace datapath's veths
// leave checksums to software, without which its TCP stalls.
func TestOVSUserspaceChecksumOff(t *testing.T) {
	d := requireMode(t, OVS, topo.CHC)
	if ovsDatapath() != DatapathUserspace {
		t.Skip("skipped: the kernel datapath is in use here; the userspace one needs no change to offloads")
	}
	tp, m := modetest.Build(t, d, topo.CHC, topo.Options{})
	server, err := m.Endpoint(tp.HostFor(true), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if features(t, server.NS, endpointIfName)["tx-checksum-ip-generic"] {
		t.Error("endpoint eth0 still offloads tx checksums")
	}
	if features(t, tp.Hosts[0].NS, "v-s1")["tx-checksum-ip-generic"] {
		t.Error("host side v-s1 still offloads tx checksums")
	}
	if _, err := m.Endpoint(tp.HostFor(false), "c1"); err != nil {
		t.Fatal(err)
	}
	on := topo.Options{Offloads: topo.Offloads{TxChecksum: "on"}}
	tp2, m2 := modetest.Build(t, d, topo.CHC, on)
	if _, err := m2.Endpoint(tp2.HostFor(true), "s1"); !errors.Is(err, mode.ErrNotApplicable) {
		t.Errorf("tx_checksum on with the userspace datapath: %v, want ErrNotApplicable", err)
	}
}
