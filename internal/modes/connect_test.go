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

func transfer(t *testing.T, name string, m mode.Mode, server, client *topo.Endpoint) {
	t.Helper()
	var ln net.Listener
	if err := server.NS.Do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(server.Addr, uint16(modetest.ListenPort(m))).String())
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
	if name == kernel.NAT && target.Addr() != server.Host.Addr {
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
		conn, err = net.DialTimeout("tcp4", target.String(), 3*time.Second)
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
