package kernel

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"cnbench/internal/mode"
	"cnbench/internal/mode/modetest"
	"cnbench/internal/topo"
)

// TestBridgeNumbersAHostsWholeCapacity places as many endpoints on one
// host as the mode table says the mode holds there (into the host's
// extension block: 1023 for the ports of a Linux bridge, 1250 macvlans),
// refuses one more, and exchanges a request
// between endpoints of the two subnets and within the extension block;
// closing the topology must leave nothing (modetest.Build). It runs for
// bridge, whose endpoints sit behind the host with a gateway in each
// subnet, and macvlan, whose endpoints sit on the wire and are acquainted
// pair by pair first, as the runner has each client and its server.
func TestBridgeNumbersAHostsWholeCapacity(t *testing.T) {
	for _, name := range []string{Bridge, Macvlan} {
		t.Run(name, func(t *testing.T) {
			d := requireMode(t, name, topo.CHC)
			capacity := d.EndpointsPerHost(topo.CHC)
			if want := map[string]int{Bridge: BridgePorts, Macvlan: MacvlanEndpoints}[name]; capacity != want {
				t.Fatalf("%s holds %d endpoints on a host, want %d", name, capacity, want)
			}
			tp, m := modetest.Build(t, d, topo.CHC, topo.Options{})
			h := tp.HostFor(true)
			eps := make([]*topo.Endpoint, capacity+1) // from 1
			start := time.Now()
			var firstTen, lastTen time.Duration
			for i := 1; i <= capacity; i++ {
				began := time.Now()
				ep, err := m.Endpoint(h, fmt.Sprintf("e%d", i))
				if err != nil {
					t.Fatalf("endpoint %d of %d: %v", i, capacity, err)
				}
				switch took := time.Since(began); {
				case i <= 10:
					firstTen += took
				case i > capacity-10:
					lastTen += took
				}
				eps[i] = ep
			}
			t.Logf("%s: %d endpoints in %v; the first ten took %v each, the last ten %v", name, capacity,
				time.Since(start).Round(time.Millisecond), firstTen/10, lastTen/10)
			if _, err := m.Endpoint(h, "over"); err == nil || !strings.Contains(err.Error(), "too many endpoints") {
				t.Errorf("endpoint %d: %v, want too many endpoints", capacity+1, err)
			}
			last := topo.BaseEndpointsPerHost
			for _, p := range [][2]int{{1, capacity}, {last, last + 1}, {capacity - 1, capacity}} {
				// As the runner does for each client and its server.
				if a, ok := m.(mode.Acquainter); ok {
					if err := a.Acquaint(eps[p[1]], eps[p[0]]); err != nil {
						t.Fatal(err)
					}
				}
				exchanges(t, eps[p[1]], eps[p[0]], 3)
				t.Logf("%s: %s and %s exchanged", name, eps[p[0]].Addr, eps[p[1]].Addr)
			}
		})
	}
}
