package kernel

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"cnbench/internal/mode/modetest"
	"cnbench/internal/netstat"
	"cnbench/internal/testutil/nstest"
	"cnbench/internal/topo"
)

// forwarded is the hosts' count of datagrams their IP stacks forwarded
// (Ip: ForwDatagrams in /proc/net/snmp of each host's namespace, and
// Ip6OutForwDatagrams in /proc/net/snmp6).
func forwarded(t *testing.T, tp *topo.Topology) int64 {
	t.Helper()
	var total int64
	for _, h := range tp.Hosts {
		ip, err := netstat.ReadSNMP(h.NS, "Ip")
		if err != nil {
			t.Fatal(err)
		}
		ip6, err := netstat.ReadSNMP6(h.NS, "Ip6")
		if err != nil {
			t.Fatal(err)
		}
		total += int64(ip["ForwDatagrams"] + ip6["OutForwDatagrams"])
	}
	return total
}

func mustLink(t *testing.T, h *topo.Host, name string) netlink.Link {
	t.Helper()
	l, err := h.Handle.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// exchanges sends n one-byte TCP requests from client to server and
// waits for each echo.
func exchanges(t *testing.T, client, server *topo.Endpoint, n int) {
	t.Helper()
	network := "tcp4"
	if server.Addr.Is6() {
		network = "tcp6"
	}
	var ln net.Listener
	if err := server.NS.Do(func() (err error) {
		ln, err = net.Listen(network, netip.AddrPortFrom(server.Addr, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go nstest.Echo(ln)
	var conn net.Conn
	if err := client.NS.Do(func() (err error) {
		conn, err = net.DialTimeout(network, ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	for range n {
		if err := nstest.RoundTrip(conn); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEBPFDatapathSkipsTheHostStack exchanges 1000 requests between
// endpoints on one host and across two, over IPv4 and IPv6, in the ebpf
// mode and in veth, whose endpoints are the same but for the programs:
// through veth, each host's IP stack forwards every packet (its
// ForwDatagrams counters grow by at least the 2000 packets); through ebpf
// the programs hand them on and the hosts forward none but the few the
// connection's start takes before the neighbours are known.
func TestEBPFDatapathSkipsTheHostStack(t *testing.T) {
	for _, kind := range []string{topo.CHC, topo.CHHC} {
		for _, c := range []struct {
			name   string
			family topo.Family
		}{{Veth, topo.IPv4}, {EBPF, topo.IPv4}, {EBPF + " on clsact", topo.IPv4}, {Veth, topo.IPv6}, {EBPF, topo.IPv6}} {
			name := c.name
			t.Run(name+"/"+kind+"/"+string(c.family), func(t *testing.T) {
				if name == EBPF+" on clsact" {
					// The attachment of kernels before tcx (6.6).
					preferTCX = false
					defer func() { preferTCX = true }()
				}
				d := requireMode(t, strings.TrimSuffix(name, " on clsact"), kind)
				tp, m := modetest.Build(t, d, kind, topo.Options{Family: c.family})
				server, client := modetest.Pair(t, tp, m)
				before := forwarded(t, tp)
				if !preferTCX {
					filters, err := tp.HostFor(true).Handle.FilterList(mustLink(t, tp.HostFor(true), "v-s1"), netlink.HANDLE_MIN_INGRESS)
					if err != nil || len(filters) != 1 {
						t.Fatalf("v-s1's ingress filters: %v %v, want the datapath's", filters, err)
					}
				}
				exchanges(t, client, server, 1000)
				n := forwarded(t, tp) - before
				t.Logf("%s/%s/%s: the hosts forwarded %d datagrams for 2000 packets", name, kind, c.family, n)
				if name == Veth && n < 2000 {
					t.Errorf("veth: the hosts forwarded %d datagrams, want at least 2000: the counter does not count what it should", n)
				}
				if name != Veth && n > 20 {
					t.Errorf("ebpf: the hosts forwarded %d datagrams; the programs should have handed the packets on", n)
				}
			})
		}
	}
}
