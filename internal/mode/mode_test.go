package mode

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"cnbench/internal/cleanup"
	"cnbench/internal/netns"
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
	for _, name := range Names() {
		for _, kind := range topo.Kinds {
			if topo.IsVM(kind) {
				continue // they boot guests; internal/runner's VM tests build them
			}
			t.Run(name+"/"+kind, func(t *testing.T) {
				d, _ := Lookup(name)
				if err := d.Check(kind); err != nil {
					if errors.Is(err, ErrUnsupported) {
						t.Skipf("skipped: %v", err)
					}
					t.Fatal(err)
				}
				tp, m := buildForTest(t, d, kind, topo.Options{})
				server, err := m.Endpoint(tp.HostFor(true), "s1")
				if err != nil {
					t.Fatal(err)
				}
				client, err := m.Endpoint(tp.HostFor(false), "c1")
				if err != nil {
					t.Fatal(err)
				}
				transfer(t, m, server, client)
			})
		}
	}
}

// buildForTest builds a topology for mode d and checks, when the test
// ends, that closing it leaves no namespace and no daemon of its token.
func buildForTest(t *testing.T, d Descriptor, kind string, opts topo.Options) (*topo.Topology, Mode) {
	t.Helper()
	token := netns.NewToken()
	tp, err := topo.Build(kind, token, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		daemons, _ := cleanup.Daemons(token)
		if err := tp.Close(); err != nil {
			t.Error(err)
		}
		left, _ := netns.List()
		for _, n := range left {
			if netns.TokenOf(n) == token {
				t.Errorf("namespace %s left after Close", n)
			}
		}
		for _, dm := range daemons {
			if dm.Alive() {
				t.Errorf("daemon %s (pid %d) left running after Close", dm.Name, dm.PID)
			}
			if _, err := os.Stat(dm.Dir); err == nil {
				t.Errorf("daemon directory %s left after Close", dm.Dir)
			}
		}
		if still, _ := cleanup.Daemons(token); len(still) > 0 {
			t.Errorf("daemon records left after Close: %v", still)
		}
	})
	m := d.New(tp)
	if p, ok := m.(Publisher); ok {
		p.Publish(testPublishedPort)
	}
	return tp, m
}

// testPublishedPort is where servers listen in modes that publish their
// port when the server's endpoint is created.
const testPublishedPort = 5301

// listenPort is the port a test server listens on in mode m: the published
// one for a Publisher, any otherwise.
func listenPort(m Mode) int {
	if _, ok := m.(Publisher); ok {
		return testPublishedPort
	}
	return 0
}

func transfer(t *testing.T, m Mode, server, client *topo.Endpoint) {
	t.Helper()
	var ln net.Listener
	if err := server.NS.Do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(server.Addr, uint16(listenPort(m))).String())
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
	if _, isNAT := m.(*natMode); isNAT && target.Addr() != server.Host.Addr {
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
