// Package topo builds where endpoints sit: emulated hosts (network
// namespaces with an emulated NIC), the wire between them, and the
// endpoints that modes place on them. Every namespace a topology creates is
// recorded, and Close removes them all; the links, addresses, routes and
// nftables tables inside them go with them.
package topo

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"cnbench/internal/netns"
	"cnbench/internal/vm"
)

// Names of the topologies cnbench builds itself.
const (
	CHC  = "chc"  // two endpoints on one host
	CHHC = "chhc" // two hosts joined by a wire, an endpoint on each
	// Routed puts the two hosts on two subnets joined by a router host.
	Routed = "routed"
)

// Kinds lists the topologies, in the order docs and doctor show them.
var Kinds = append([]string{CHC, CHHC, Routed}, VMKinds...)

// Aliases are the names Kubernetes' tools give the two placements
// (k8s-netperf, perf-tests: same node, across nodes), taken for the
// topologies they mean wherever a topology is named.
var Aliases = map[string]string{"same-node": CHC, "cross-node": CHHC}

// NICName is the emulated NIC's name inside every host.
const NICName = "nic0"

// Options shape the emulated hosts' NICs.
type Options struct {
	// NICRateBPS limits each NIC's egress with tc tbf; 0 means unlimited.
	NICRateBPS int64
	// MTU of the NICs and of every link modes create; 0 means 1500.
	MTU int
	// Offloads of the NICs and every veth; empty fields keep the kernel's
	// defaults.
	Offloads Offloads
	// Family is the IP version of every address the topology and its
	// modes assign; empty is IPv4.
	Family Family
}

// Host is an emulated machine: a namespace with one emulated NIC.
type Host struct {
	Index int    // 1-based
	Name  string // "h1"
	NS    *netns.NS
	// Addr is the NIC's address on the underlay.
	Addr netip.Addr
	// Segment is the subnet of the wire the NIC is on; endpoints that sit
	// on the wire (macvlan, ipvlan l2) take addresses from it.
	Segment netip.Prefix
	// Router is the gateway to other segments, in the routed topology;
	// invalid where all hosts share one segment.
	Router netip.Addr
	// Handle is a netlink socket bound to the host's namespace.
	Handle *netlink.Handle
	// Guest is the running VM when the host is one; modes then build
	// inside it (through its agent), NS is the namespace of the emulated
	// host GuestOn that runs it, and Handle is nil.
	Guest   *vm.Guest
	GuestOn *Host
}

// Endpoint is a container: a namespace on a host, or the host itself for
// the native baseline, where an engine runs.
type Endpoint struct {
	Name string
	Host *Host
	NS   *netns.NS
	Addr netip.Addr
}

// Topology is a built set of hosts. Modes add endpoints to it.
type Topology struct {
	Kind  string
	Token netns.Token
	Opts  Options
	Hosts []*Host
	// RouterHost joins the segments in the routed topology; nil otherwise.
	RouterHost *Host
	// Peers are the underlay addresses of hosts on other machines, in a
	// topology built on one machine of several (BuildOnParent), or of
	// every other host, inside a VM guest (AdoptNIC).
	Peers []netip.Addr
	// Guests are the VM hosts of a VM topology (vm.go), beside Hosts.
	Guests []*Host

	// serverHost and clientHost override HostFor in VM topologies.
	serverHost, clientHost *Host

	mu   sync.Mutex
	stub *netns.NS // the far end of chc's NIC
	// routerPorts are the router's side of each routed host's cable, by
	// host index (routed, leafspine:N).
	routerPorts map[int]routerPort
	namespaces  []*netns.NS
	handles     []*netlink.Handle
	closers     []func() error
}

// HostFor returns the host a server or a client endpoint sits on: in chc
// every endpoint shares host 1; across hosts, servers sit on host 1 and
// clients on host 2.
func (t *Topology) HostFor(server bool) *Host {
	if server && t.serverHost != nil {
		return t.serverHost
	}
	if !server && t.clientHost != nil {
		return t.clientHost
	}
	if server || len(t.Hosts) == 1 {
		return t.Hosts[0]
	}
	return t.Hosts[1]
}

// NewNamespace creates a namespace named after the run's token and role
// and records it for Close.
func (t *Topology) NewNamespace(role string) (*netns.NS, *netlink.Handle, error) {
	ns, err := netns.Create(t.Token.Name(role))
	if err != nil {
		return nil, nil, err
	}
	h, err := netlink.NewHandleAt(ns.Handle())
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("netlink handle in %q: %w", ns.Name, err), ns.Delete())
	}
	if err := t.Family().PrepareNamespace(ns, false); err != nil {
		h.Close()
		return nil, nil, errors.Join(err, ns.Delete())
	}
	t.mu.Lock()
	t.namespaces = append(t.namespaces, ns)
	t.handles = append(t.handles, h)
	t.mu.Unlock()
	return ns, h, nil
}

// OnClose registers fn to run, before the namespaces go, when the topology
// is closed; modes use it for what lives outside namespaces, such as
// daemons.
func (t *Topology) OnClose(fn func() error) {
	t.mu.Lock()
	t.closers = append(t.closers, fn)
	t.mu.Unlock()
}

// Close removes everything the topology and its modes created. It goes on
// past errors and reports them all, so a half-built topology is removed as
// far as it can be.
func (t *Topology) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for i := len(t.closers) - 1; i >= 0; i-- {
		errs = append(errs, t.closers[i]())
	}
	t.closers = nil
	for _, h := range t.handles {
		h.Close()
	}
	t.handles = nil
	// What the closers stopped is gone; what is left was started by
	// something that died first: containerd's shims outlive a dockerd
	// killed mid-sample, and would keep the namespace alive unnamed.
	names := make([]string, len(t.namespaces))
	for i, ns := range t.namespaces {
		names[i] = ns.Name
	}
	netns.EndOccupants(names, 2*time.Second)
	for i := len(t.namespaces) - 1; i >= 0; i-- {
		errs = append(errs, t.namespaces[i].Delete())
	}
	t.namespaces = nil
	return errors.Join(errs...)
}

// MTU is the MTU links in this topology use.
func (t *Topology) MTU() int {
	if t.Opts.MTU > 0 {
		return t.Opts.MTU
	}
	return 1500
}

// Scratch is an empty topology, with no hosts, for short-lived namespaces
// such as kernel probes; Close removes what was made in it.
func Scratch(token netns.Token) (*Topology, error) {
	return &Topology{Kind: "scratch", Token: token}, nil
}
