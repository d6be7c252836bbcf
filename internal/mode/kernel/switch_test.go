package kernel

import (
	"fmt"
	"net"
	"testing"
	"time"

	"cnbench/internal/mode/modetest"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/testutil/nstest"
	"cnbench/internal/topo"
)

// TestSwitchJoinsEveryHostToEveryOther places the endpoints of an
// all-to-all case on switch:5 and on leafspine:5 (two leaves), one on
// each host, in every mode that crosses hosts, and exchanges requests
// from each endpoint to each other one through the address the mode
// exposes it at.
func TestSwitchJoinsEveryHostToEveryOther(t *testing.T) {
	const hosts = 5
	for _, kind := range []string{topo.Switch(hosts), topo.LeafSpine(hosts)} {
		for _, name := range []string{Veth, Bridge, Macvlan, Overlay, NAT, EBPF} {
			t.Run(kind+"/"+name, func(t *testing.T) { joinEveryHost(t, kind, name, hosts) })
		}
	}
}

// joinEveryHost is TestSwitchJoinsEveryHostToEveryOther for one kind and mode.
func joinEveryHost(t *testing.T, kind, name string, hosts int) {
	d := requireMode(t, name, kind)
	tp, m := modetest.Build(t, d, kind, topo.Options{})
	if len(tp.Hosts) != hosts {
		t.Fatalf("%s built %d hosts", kind, len(tp.Hosts))
	}
	eps := make([]*topo.Endpoint, hosts)
	for i := range eps {
		h := tp.ServerHost(i, model.PatternAllToAll)
		if h.Index != i+1 {
			t.Fatalf("endpoint %d of the all-to-all case sits on host %d, want %d", i, h.Index, i+1)
		}
		ep, err := m.Endpoint(h, fmt.Sprintf("e%d", i+1))
		if err != nil {
			t.Fatal(err)
		}
		eps[i] = ep
	}
	const port = 5400
	for b, server := range eps {
		at, err := m.Expose(server, port)
		if err != nil {
			t.Fatal(err)
		}
		ln := listen(t, server.NS, port)
		for a, client := range eps {
			if a != b {
				exchangeAt(t, client.NS, at.String(), 2)
			}
		}
		ln.Close()
	}
}

// TestSwitchReflectsVEPA has two macvlan:vepa endpoints of one host of
// switch:3 talk, which only the switch's hairpin makes possible, and one
// of them talk to an endpoint on another host.
func TestSwitchReflectsVEPA(t *testing.T) {
	kind := topo.Switch(3)
	d := requireMode(t, MacvlanVEPA, kind)
	tp, m := modetest.Build(t, d, kind, topo.Options{})
	var eps []*topo.Endpoint
	for i, h := range []*topo.Host{tp.Hosts[0], tp.Hosts[0], tp.Hosts[2]} {
		ep, err := m.Endpoint(h, fmt.Sprintf("e%d", i+1))
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	exchanges(t, eps[0], eps[1], 2)
	exchanges(t, eps[2], eps[0], 2)
}

// TestSwitchOf64HostsBuildsAndLeavesNothing builds the largest switch and
// leaf-spine, exchanges requests between endpoints on their first and
// last hosts, and closes them (modetest.Build holds the close to leaving
// nothing); one host more is refused.
func TestSwitchOf64HostsBuildsAndLeavesNothing(t *testing.T) {
	for _, of := range []func(int) string{topo.Switch, topo.LeafSpine} {
		kind := of(topo.MaxHosts)
		t.Run(kind, func(t *testing.T) {
			d := requireMode(t, Veth, kind)
			start := time.Now()
			tp, m := modetest.Build(t, d, kind, topo.Options{})
			t.Logf("%s built in %v", kind, time.Since(start).Round(time.Millisecond))
			first, err := m.Endpoint(tp.Hosts[0], "e1")
			if err != nil {
				t.Fatal(err)
			}
			last, err := m.Endpoint(tp.Hosts[topo.MaxHosts-1], "e64")
			if err != nil {
				t.Fatal(err)
			}
			exchanges(t, first, last, 3)
			exchanges(t, last, first, 3)
			if _, err := topo.Build(of(topo.MaxHosts+1), netns.NewToken(), topo.Options{}); err == nil {
				t.Errorf("%s built", of(topo.MaxHosts+1))
			}
		})
	}
}

// listen serves echoes on port in ns until closed.
func listen(t *testing.T, ns *netns.NS, port int) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() (err error) {
		ln, err = net.Listen("tcp4", fmt.Sprintf(":%d", port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	go nstest.Echo(ln)
	return ln
}

// exchangeAt sends n requests from ns to the echo server at addr.
func exchangeAt(t *testing.T, ns *netns.NS, addr string, n int) {
	t.Helper()
	var conn net.Conn
	if err := ns.Do(func() (err error) {
		conn, err = net.DialTimeout("tcp4", addr, 5*time.Second)
		return err
	}); err != nil {
		t.Fatalf("%s to %s: %v", ns.Name, addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	for range n {
		if err := nstest.RoundTrip(conn); err != nil {
			t.Fatalf("%s to %s: %v", ns.Name, addr, err)
		}
	}
}
