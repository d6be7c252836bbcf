package modes_test

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"cnbench/internal/mode"
	"cnbench/internal/mode/kernel"
	"cnbench/internal/mode/modetest"
	"cnbench/internal/modes"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
)

// TestEveryModeConnects builds each registered mode in each topology and
// moves bytes over TCP from a client endpoint to a server endpoint through
// the address the mode exposes. A combination this machine or the
// topology rules out is skipped with the reason; TestSkipsAreTrue checks
// those reasons.
func TestEveryModeConnects(t *testing.T) {
	testutil.RequireRoot(t)
	for _, name := range modes.Names() {
		for _, kind := range topo.Kinds {
			if topo.IsVM(kind) {
				continue // they boot guests; internal/runner's VM tests build them
			}
			t.Run(name+"/"+kind, func(t *testing.T) {
				d, _ := modes.Lookup(name)
				if err := d.Check(kind); err != nil {
					if errors.Is(err, mode.ErrUnsupported) {
						t.Skipf("skipped: %v", err)
					}
					t.Fatal(err)
				}
				tp, m := modetest.Build(t, d, kind, topo.Options{})
				server, client := modetest.Pair(t, tp, m)
				transfer(t, name, m, server, client)
			})
		}
	}
}

// TestEveryModeConnectsOverEachFamily builds each mode that numbers in
// IPv6 with an IPv6-only and a dual-stack topology, in each topology this
// machine builds, and moves bytes over TCP between its endpoints: over
// IPv6 from the plan's 2001:2::/96, the endpoints holding an IPv4 address
// in dual and none in ipv6. A mode without IPv6 is refused with its
// reason.
func TestEveryModeConnectsOverEachFamily(t *testing.T) {
	testutil.RequireRoot(t)
	plan6 := netip.MustParsePrefix("2001:2::/96")
	for _, name := range modes.Names() {
		d, _ := modes.Lookup(name)
		for _, family := range []topo.Family{topo.IPv6, topo.Dual} {
			for _, kind := range []string{topo.CHC, topo.CHHC, topo.Routed, "switch:3", "leafspine:2"} {
				t.Run(name+"/"+kind+"/"+string(family), func(t *testing.T) {
					if err := d.CheckFamily(family, kind); err != nil {
						if d.IPv6 || !errors.Is(err, mode.ErrNotApplicable) {
							t.Fatalf("a mode with IPv6 %v refused, or refused for the wrong reason: %v", d.IPv6, err)
						}
						t.Skipf("skipped: %v", err)
					}
					if err := d.Check(kind); err != nil {
						if errors.Is(err, mode.ErrUnsupported) {
							t.Skipf("skipped: %v", err)
						}
						t.Fatal(err)
					}
					tp, m := modetest.Build(t, d, kind, topo.Options{Family: family})
					server, client := modetest.Pair(t, tp, m)
					for _, ep := range []*topo.Endpoint{server, client} {
						if !plan6.Contains(ep.Addr) {
							t.Fatalf("%s's address %s is not in the IPv6 plan %s", ep.Name, ep.Addr, plan6)
						}
						if has4 := holdsIPv4(t, ep); has4 != (family == topo.Dual) {
							t.Errorf("%s holds an IPv4 address: %v, in family %s", ep.Name, has4, family)
						}
					}
					transfer(t, name, m, server, client)
				})
			}
		}
	}
}

// holdsIPv4 reports whether an endpoint's namespace has an IPv4 address
// beyond loopback.
func holdsIPv4(t *testing.T, ep *topo.Endpoint) bool {
	t.Helper()
	var found bool
	err := ep.NS.Do(func() error {
		addrs, err := net.InterfaceAddrs()
		for _, a := range addrs {
			if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
				found = true
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func transfer(t *testing.T, name string, m mode.Mode, server, client *topo.Endpoint) {
	t.Helper()
	network := "tcp4"
	if server.Addr.Is6() {
		network = "tcp6"
	}
	var ln net.Listener
	if err := server.NS.Do(func() (err error) {
		ln, err = net.Listen(network, netip.AddrPortFrom(server.Addr, uint16(modetest.ListenPort(m))).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	target, err := m.Expose(server, port)
	if err != nil {
		t.Fatal(err)
	}
	if name == kernel.NAT && topo.To4(target.Addr()) != server.Host.Addr {
		t.Fatalf("nat exposes %s, want the server host's address %s", target, server.Host.Addr)
	}
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- string(b) + " from " + c.RemoteAddr().(*net.TCPAddr).IP.String()
	}()
	var conn net.Conn
	if err := client.NS.Do(func() (err error) {
		conn, err = net.DialTimeout(network, target.String(), 3*time.Second)
		return err
	}); err != nil {
		t.Fatalf("dial %s from %s: %v", target, client.Addr, err)
	}
	if _, err := conn.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	select {
	case s := <-got:
		t.Logf("server %s via %s got %q", server.Addr, target, s)
		if len(s) < 5 || s[:5] != "hello" {
			t.Fatalf("server got %q, want hello", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("server got nothing within 5s")
	}
}
