package explain

import (
	"net"
	"strings"
	"testing"
	"time"

	"cnbench/internal/netns"
	"cnbench/internal/testutil"
	"cnbench/internal/testutil/nstest"
)

func inodeOf(t *testing.T, ns *netns.NS) uint32 {
	t.Helper()
	ino, err := NamespaceInode(ns.Path())
	if err != nil {
		t.Fatal(err)
	}
	return ino
}

// TestTracerFollowsMessagesOverAVethPair traces a TCP request/response
// exchange between two namespaces joined by a veth pair: each direction's
// messages must be followed from TCP's send through the sender's device
// and the receiver's to the receiving socket and the read, with every
// gap positive and the whole way shorter than the exchange's round trip.
// The same exchange over this process's loopback, outside the traced
// namespaces, must leave no trail.
func TestTracerFollowsMessagesOverAVethPair(t *testing.T) {
	testutil.RequireRoot(t)
	if err := TraceAvailable(); err != nil {
		t.Skip("cannot trace here: ", err)
	}
	a, b := nstest.VethPair(t)
	var ln net.Listener
	if err := b.Do(func() (err error) { ln, err = net.Listen("tcp4", "198.18.200.2:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go nstest.Echo(ln)
	var conn net.Conn
	if err := a.Do(func() (err error) { conn, err = net.Dial("tcp4", ln.Addr().String()); return err }); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	outside, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()
	go nstest.Echo(outside)
	other, err := net.Dial("tcp4", outside.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	inA, inB := inodeOf(t, a), inodeOf(t, b)
	tr, err := PathTracer{Spaces: []TraceNamespace{
		{Inode: inA, Label: "client", Client: true},
		{Inode: inB, Label: "server", Server: true},
	}}.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	began := time.Now()
	exchanges := 0
	for time.Since(began) < time.Second {
		for _, c := range []net.Conn{conn, other} {
			if err := nstest.RoundTrip(c); err != nil {
				t.Fatal(err)
			}
		}
		exchanges++
	}
	roundTripUS := float64(time.Since(began).Microseconds()) / float64(exchanges)
	if err := tr.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, e := range tr.events {
		if e.Netns != inA && e.Netns != inB {
			t.Fatalf("an event of namespace %d, not one of the traced ones: %+v", e.Netns, e)
		}
	}
	lat := tr.Latency()
	if len(lat.Directions) != 2 {
		t.Fatalf("want a request and a response direction, got %+v", lat)
	}
	want := map[string][]string{
		"request":  {"send@client", "tx v0@client", "rx v1@server", "socket@server", "read@server"},
		"response": {"send@server", "tx v1@server", "rx v0@client", "socket@client", "read@client"},
	}
	for _, d := range lat.Directions {
		t.Logf("%s: %d messages (%d others), total %.1f us: %s %v", d.Direction, d.Messages, d.Others, d.TotalUS, strings.Join(d.Stages, " > "), d.GapsUS)
		if got := strings.Join(d.Stages, " > "); got != strings.Join(want[d.Direction], " > ") {
			t.Errorf("%s stages = %s, want %s", d.Direction, got, strings.Join(want[d.Direction], " > "))
		}
		// One window in eight of a second of exchanges.
		if d.Messages < exchanges/8/4 {
			t.Errorf("%s: %d messages followed of %d exchanges", d.Direction, d.Messages, exchanges)
		}
		sum := 0.0
		for i, g := range d.GapsUS {
			if g <= 0 {
				t.Errorf("%s: gap %s > %s is %v us", d.Direction, d.Stages[i], d.Stages[i+1], g)
			}
			sum += g
		}
		if d.TotalUS <= 0 || d.TotalUS > roundTripUS {
			t.Errorf("%s: total %.1f us, the exchanges' mean round trip (both paths) %.1f us", d.Direction, d.TotalUS, roundTripUS)
		}
		if sum < d.TotalUS*0.5 || sum > d.TotalUS*2 {
			t.Errorf("%s: gaps' medians add to %.1f us, far from the median total %.1f us", d.Direction, sum, d.TotalUS)
		}
	}
}
