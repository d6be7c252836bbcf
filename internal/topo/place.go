package topo

import (
	"slices"

	"cnbench/internal/model"
)

// Where a case's endpoints sit. On one host (chc, and VM topologies whose
// endpoints share a guest) they all share it. Between two hosts, servers
// sit on the first and clients on the second, as a client and a server
// machine. On a switch or a leaf-spine, and for the all-to-all pattern,
// they spread: server i on host i mod H, and each client on a host other
// than its server's, turning through the others, so that every host
// sends to every other. All-to-all takes its endpoints as both: client j of
// server b comes from endpoint (b + 1 + j div K) mod K, on that
// endpoint's host, so each of the K endpoints sends to the K-1 others.

// spreads reports whether a topology of kind spreads a pattern's
// endpoints over its hosts.
func spreads(kind, pattern string) bool {
	if SharesHost(kind) || IsVM(kind) {
		return false
	}
	return ManyHosts(kind) > 0 || pattern == model.PatternAllToAll
}

// serverSpot is the 0-based host of server i among hosts.
func serverSpot(hosts, i int) int { return i % hosts }

// clientSpot is the 0-based host of client j among hosts, in a case of
// servers servers and the given pattern, where endpoints spread.
func clientSpot(hosts, servers, j int, pattern string) int {
	b := j % servers
	if pattern == model.PatternAllToAll {
		return serverSpot(hosts, (b+1+j/servers)%servers)
	}
	if hosts < 2 {
		return serverSpot(hosts, b)
	}
	return (serverSpot(hosts, b) + 1 + (j/servers)%(hosts-1)) % hosts
}

// ServerHost is the host server i of a case with pattern sits on.
func (t *Topology) ServerHost(i int, pattern string) *Host {
	if !spreads(t.Kind, pattern) || len(t.Hosts) < 2 {
		return t.HostFor(true)
	}
	return t.Hosts[serverSpot(len(t.Hosts), i)]
}

// ClientHost is the host client j of a case of servers servers with
// pattern sits on.
func (t *Topology) ClientHost(j, servers int, pattern string) *Host {
	if !spreads(t.Kind, pattern) || len(t.Hosts) < 2 {
		return t.HostFor(false)
	}
	return t.Hosts[clientSpot(len(t.Hosts), servers, j, pattern)]
}

// hostCount is how many hosts a topology of kind places endpoints on.
func hostCount(kind string) int {
	if n := ManyHosts(kind); n > 0 {
		return n
	}
	if SharesHost(kind) {
		return 1
	}
	return 2
}

// BusiestHost is the most endpoints a case of params p places on one
// host of a topology of kind: the bound on endpoints per host applies to
// it.
func BusiestHost(kind string, p model.Params) int {
	servers, clients := p.Endpoints()
	hosts := hostCount(kind)
	switch {
	case hosts == 1:
		return servers + clients
	case !spreads(kind, p.Pattern):
		return max(servers, clients)
	}
	on := make([]int, hosts)
	for i := range servers {
		on[serverSpot(hosts, i)]++
	}
	for j := range clients {
		on[clientSpot(hosts, servers, j, p.Pattern)]++
	}
	return slices.Max(on)
}
