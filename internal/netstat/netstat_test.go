package netstat

import (
	"net"
	"testing"
	"time"

	"cnbench/internal/testutil"
	"cnbench/internal/testutil/nstest"
)

// snmp is /proc/net/snmp's Udp lines as Linux 6.18 writes them.
const snmp = `Ip: Forwarding DefaultTTL InReceives
Ip: 2 64 17
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 4466 3 12 5 9 0 0 0 0
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 1 0 0 0 0 0 0 0 0
`

func TestParseSNMPUDP(t *testing.T) {
	got, err := ParseSNMPUDP([]byte(snmp))
	if err != nil {
		t.Fatal(err)
	}
	if want := (UDP{InDatagrams: 4466, InErrors: 12, RcvbufErrors: 9}); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, err := ParseSNMPUDP([]byte("Ip: Forwarding\nIp: 1\n")); err == nil {
		t.Fatal("no Udp lines: want an error")
	}
	if _, err := ParseSNMPUDP([]byte("Udp: InDatagrams\nUdp: many\n")); err == nil {
		t.Fatal("a word for a number: want an error")
	}
}

func TestSumLeavesOutWhatCountedRefuses(t *testing.T) {
	links := []Link{
		{Name: "eth0", Type: "veth", RxBytes: 100, RxPackets: 2, TxBytes: 50, TxPackets: 1},
		{Name: "br0", Type: "bridge", RxBytes: 100, RxPackets: 2},
		{Name: "lo", Type: "device", RxBytes: 7, RxPackets: 1, RxDropped: 1},
	}
	got := Sum(links, func(l Link) bool { return l.Type != "bridge" })
	want := Counters{RxBytes: 107, RxPackets: 3, RxDropped: 1, TxBytes: 50, TxPackets: 1}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if d := got.Sub(Counters{RxBytes: 7, RxPackets: 1}); d.RxBytes != 100 || d.RxPackets != 2 {
		t.Fatalf("Sub: %+v", d)
	}
}

// TestReadLinksCountsRealTraffic sends datagrams over a veth pair between
// two fresh namespaces and finds them in both ends' counters and in the
// receiver's UDP counters.
func TestReadLinksCountsRealTraffic(t *testing.T) {
	testutil.RequireRoot(t)
	a, b := nstest.VethPair(t)
	udpBefore, err := ReadUDP(b)
	if err != nil {
		t.Fatal(err)
	}
	const datagrams, size = 50, 1000
	var conn net.PacketConn
	if err := b.Do(func() (err error) { conn, err = net.ListenPacket("udp4", "198.18.200.2:9"); return err }); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = a.Do(func() error {
		out, err := net.Dial("udp4", "198.18.200.2:9")
		if err != nil {
			return err
		}
		defer out.Close()
		for range datagrams {
			if _, err := out.Write(make([]byte, size)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Delivery over a veth is asynchronous: read what arrived first.
	buf := make([]byte, size)
	for range datagrams {
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, _, err := conn.ReadFrom(buf); err != nil {
			t.Fatal(err)
		}
	}
	links, err := ReadLinks(b)
	if err != nil {
		t.Fatal(err)
	}
	rx := Sum(links, func(l Link) bool { return l.Name == "v1" })
	if rx.RxPackets < datagrams || rx.RxBytes < datagrams*size {
		t.Fatalf("v1 received %d frames, %d bytes; sent at least %d datagrams of %d bytes", rx.RxPackets, rx.RxBytes, datagrams, size)
	}
	udpAfter, err := ReadUDP(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := udpAfter.Sub(udpBefore).InDatagrams; got != datagrams {
		t.Fatalf("InDatagrams rose by %d, want %d", got, datagrams)
	}
}

func TestListensOnReadsProcNet(t *testing.T) {
	// /proc/net/tcp: a listener on 5201 (0x1451), a connection from 5202.
	tcp := []byte(`  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0A12C6C6:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0A12C6C6:1452 0B12C6C6:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
`)
	if !listensOn(tcp, "tcp", 5201) || listensOn(tcp, "tcp", 5202) || listensOn(tcp, "udp", 5201) {
		t.Error("listensOn misread /proc/net/tcp")
	}
}
