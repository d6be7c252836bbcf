package topo

import (
	"testing"

	"cnbench/internal/model"
)

// TestAllToAllSendsFromEveryHostToEveryOther checks the placement by
// counting: in an all-to-all case of K endpoints on K hosts every ordered
// pair of distinct hosts carries exactly one client's flow; in a fan-in
// on a switch no client shares its server's host and the clients split
// evenly over the others; chhc keeps servers on one host and clients on
// the other.
func TestAllToAllSendsFromEveryHostToEveryOther(t *testing.T) {
	for _, k := range []int{2, 3, 8, 32} {
		p := model.Params{Pattern: model.PatternAllToAll, Clients: k}
		servers, clients := p.Endpoints()
		if servers != k || clients != k*(k-1) {
			t.Fatalf("all_to_all of %d: %d servers, %d clients", k, servers, clients)
		}
		pairs := map[[2]int]int{}
		for j := range clients {
			from, to := clientSpot(k, servers, j, p.Pattern), serverSpot(k, j%servers)
			if from == to {
				t.Fatalf("all_to_all of %d: client %d sits on its server's host %d", k, j, to+1)
			}
			pairs[[2]int{from, to}]++
		}
		if len(pairs) != k*(k-1) {
			t.Errorf("all_to_all of %d: %d host pairs carry flows, want %d", k, len(pairs), k*(k-1))
		}
		if got := BusiestHost(Switch(k), p); got != k {
			t.Errorf("all_to_all of %d on %s: busiest host holds %d, want %d", k, Switch(k), got, k)
		}
	}
	fanIn := model.Params{Pattern: model.PatternFanIn, Clients: 9}
	on := make([]int, 4)
	for j := range 9 {
		h := clientSpot(4, 1, j, fanIn.Pattern)
		if h == serverSpot(4, 0) {
			t.Fatalf("fan_in client %d on its server's host", j)
		}
		on[h]++
	}
	if on[1] != 3 || on[2] != 3 || on[3] != 3 {
		t.Errorf("fan_in of 9 over switch:4: clients per host %v, want 3 on each of hosts 2-4", on)
	}
	for _, tc := range []struct {
		kind string
		p    model.Params
		want int
	}{
		{CHC, fanIn, 10},
		{CHHC, fanIn, 9},
		{Switch(4), fanIn, 3},
		{LeafSpine(4), fanIn, 3},
		{CHHC, model.Params{Pattern: model.PatternAllToAll, Clients: 4}, 8}, // 2 endpoints on each, as servers and as 3 clients each
		{Switch(2), model.Params{Pattern: model.PatternNToM, Servers: 4, Clients: 8}, 6},
	} {
		if got := BusiestHost(tc.kind, tc.p); got != tc.want {
			t.Errorf("%s, %+v: busiest host holds %d, want %d", tc.kind, tc.p, got, tc.want)
		}
	}
	for _, bad := range []string{"switch:1", "switch:65", "switch:x", "switch:04", "switch", "leafspine:1", "leafspine:65", "leafspine:"} {
		if CheckKind(bad) == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
