package kernel

import (
	"bufio"
	"bytes"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"cnbench/internal/mode/modetest"
	"cnbench/internal/topo"
)

// forwarded is the host's count of datagrams its IP stack forwarded
// (Ip: ForwDatagrams in /proc/net/snmp of its namespace).
func forwarded(t *testing.T, tp *topo.Topology) int64 {
	t.Helper()
	var total int64
	for _, h := range tp.Hosts {
		var data []byte
		if err := h.NS.Do(func() (err error) {
			data, err = os.ReadFile("/proc/thread-self/net/snmp")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var header []string
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 || f[0] != "Ip:" {
				continue
			}
			if header == nil {
				header = f
				continue
			}
			for i, name := range header {
				if name == "ForwDatagrams" && i < len(f) {
					n, err := strconv.ParseInt(f[i], 10, 64)
					if err != nil {
						t.Fatal(err)
					}
					total += n
				}
			}
		}
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
	var ln net.Listener
	if err := server.NS.Do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(server.Addr, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	var conn net.Conn
	if err := client.NS.Do(func() (err error) {
		conn, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	buf := []byte{1}
	for range n {
		if _, err := conn.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEBPFDatapathSkipsTheHostStack exchanges 1000 requests between
// endpoints on one host and across two, in the ebpf mode and in veth,
// whose endpoints are the same but for the programs: through veth, each
// host's IP stack forwards every packet (its ForwDatagrams counter grows
// by at least the 2000 packets); through ebpf the programs hand them on
// and the hosts forward none but the few the connection's start takes
// before the neighbours are known.
func TestEBPFDatapathSkipsTheHostStack(t *testing.T) {
	for _, kind := range []string{topo.CHC, topo.CHHC} {
		for _, name := range []string{Veth, EBPF, EBPF + " on clsact"} {
			t.Run(name+"/"+kind, func(t *testing.T) {
				if name == EBPF+" on clsact" {
					// The attachment of kernels before tcx (6.6).
					preferTCX = false
					defer func() { preferTCX = true }()
				}
				d := requireMode(t, strings.TrimSuffix(name, " on clsact"), kind)
				tp, m := modetest.Build(t, d, kind, topo.Options{})
				server, err := m.Endpoint(tp.HostFor(true), "s1")
				if err != nil {
					t.Fatal(err)
				}
				client, err := m.Endpoint(tp.HostFor(false), "c1")
				if err != nil {
					t.Fatal(err)
				}
				before := forwarded(t, tp)
				if !preferTCX {
					filters, err := tp.HostFor(true).Handle.FilterList(mustLink(t, tp.HostFor(true), "v-s1"), netlink.HANDLE_MIN_INGRESS)
					if err != nil || len(filters) != 1 {
						t.Fatalf("v-s1's ingress filters: %v %v, want the datapath's", filters, err)
					}
				}
				exchanges(t, client, server, 1000)
				n := forwarded(t, tp) - before
				t.Logf("%s/%s: the hosts forwarded %d datagrams for 2000 packets", name, kind, n)
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
