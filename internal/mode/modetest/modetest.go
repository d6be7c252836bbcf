// Package modetest builds modes in real topologies for tests, and checks
// that closing the topology takes away everything they made.
package modetest

import (
	"os"
	"testing"

	"cnbench/internal/cleanup"
	"cnbench/internal/mode"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// Build builds a topology for mode d and checks, when the test ends, that
// closing it leaves no namespace and no daemon of its token.
func Build(t *testing.T, d mode.Descriptor, kind string, opts topo.Options) (*topo.Topology, mode.Mode) {
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
	if p, ok := m.(mode.Publisher); ok {
		p.Publish(PublishedPort)
	}
	return tp, m
}

// PublishedPort is where servers listen in modes that publish their port
// when the server's endpoint is created.
const PublishedPort = 5301

// ListenPort is the port a test server listens on in mode m: the
// published one for a Publisher, any otherwise.
func ListenPort(m mode.Mode) int {
	if _, ok := m.(mode.Publisher); ok {
		return PublishedPort
	}
	return 0
}

// Pair places a server endpoint "s1" on the server's host and a client
// endpoint "c1" on the client's.
func Pair(t *testing.T, tp *topo.Topology, m mode.Mode) (server, client *topo.Endpoint) {
	t.Helper()
	server, err := m.Endpoint(tp.HostFor(true), "s1")
	if err != nil {
		t.Fatal(err)
	}
	client, err = m.Endpoint(tp.HostFor(false), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.AwaitIPv6(); err != nil {
		t.Fatal(err)
	}
	return server, client
}
