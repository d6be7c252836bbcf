// Package mode is the contract between cnbench's network modes and the
// rest of it: the small Mode interface every mode implements, the
// Descriptor that is one row of the mode table, the Table type, the
// errors that make a case a skip rather than a failure, and the kernel
// probes modes share.
//
// The implementations live in sub-packages by family: kernel (host, veth,
// bridge, macvlan, ipvlan, ovs, nat, overlay), docker (docker:*), cni
// (cni:FILE) and cluster (swarm:*). Each family exports its rows, and
// package modes puts them in the one table that every other package
// reads. Adding a mode is one file in its family and one row.
package mode

import (
	"errors"
	"fmt"
	"net/netip"

	"cnbench/internal/model"
	"cnbench/internal/topo"
)

// Mode builds endpoints of one kind within one topology. A Mode value is
// made per topology and may keep per-host state, such as a bridge it has
// already created; everything it creates lives in the topology's
// namespaces or is registered with Topology.OnClose, so closing the
// topology removes it.
type Mode interface {
	// Endpoint places a new endpoint on host h and connects it. name is
	// unique within the topology and short (it becomes part of a
	// namespace name).
	Endpoint(h *topo.Host, name string) (*topo.Endpoint, error)
	// Expose makes port on server endpoint ep reachable to clients and
	// returns the address they dial.
	Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error)
}

// Publisher is a mode that must know a server's ports before it creates
// the server's endpoint: `docker run -p` and `--expose` are fixed when the
// container is created, and the CNI portmap plugin takes its mappings
// when the network is added. The runner calls Publish before placing
// endpoints, and the engine then listens on exactly those ports; Expose
// serves only them.
type Publisher interface {
	Publish(ports ...int)
}

// Acquainter is a mode whose endpoints resolve each other by ARP on one
// link layer across hosts. The kernel keeps one ARP table for every
// namespace, which refuses new entries beyond gc_thresh3 (1024 unless
// the machine's owner raised it, and cnbench leaves it alone): in an
// all-to-all case of a thousand endpoints each client's entry for its
// server and each server's for its clients overflowed it, and
// connections failed with "no route to host". The runner calls Acquaint
// for each client and the server it talks to, once both are placed, and
// the mode makes them known to each other for good (permanent entries do
// not count against the bound).
type Acquainter interface {
	Acquaint(client, server *topo.Endpoint) error
}

// Family is the sub-package a mode's implementation lives in.
type Family string

// The families of modes.
const (
	Kernel  Family = "kernel"  // built from the kernel's parts by cnbench itself
	Docker  Family = "docker"  // built by a private dockerd
	CNI     Family = "cni"     // built by CNI plugins from a configuration
	Cluster Family = "cluster" // deployed on an existing cluster's nodes
)

// Descriptor is one row of the mode table: every fact about a mode that
// other packages need, written once.
type Descriptor struct {
	Name    string
	Summary string
	Family  Family
	// Available returns nil if this machine can build the mode, or an
	// error wrapping ErrUnsupported that says why not.
	Available func() error
	// Supports reports whether the mode can work in a topology at all,
	// on any machine, with an error wrapping ErrNotApplicable if not; nil
	// means in every topology.
	Supports func(topology string) error
	// Record fills in what the mode decides for itself, such as the OVS
	// datapath, so that it is stored with the case; nil if nothing.
	Record func(p *model.Params)
	// New makes the mode for a topology.
	New func(t *topo.Topology) Mode
	// Guests says whether VM guests build the mode, and with what.
	Guests Guests
	// Uncounted are the kinds of link the mode creates that a frame
	// crosses on its way to another link of the same namespace (bridges,
	// VTEPs): their counters are not traffic of their own.
	Uncounted []string
	// Addresses is where the mode's endpoints take their addresses from.
	Addresses topo.Addressing
	// IPv6 is true for a mode that numbers its endpoints in IPv6 too, in
	// ipv6 and dual topologies (topo.Family); the others run in ipv4
	// only.
	IPv6 bool
	// HostEndpoints is the most endpoints the mode places on one host:
	// 0 for a mode that numbers them in the host's first subnet only
	// (topo.BaseEndpointsPerHost); up to model.MaxEndpointsPerHost for
	// one that numbers from the host's extension block too, less where
	// its own device holds fewer (see EndpointsPerHost).
	HostEndpoints int

	// guestModes are the table's modes built in guests, for Check's
	// reasons; Table.Lookup fills them in.
	guestModes []string
}

// EndpointsPerHost is how many endpoints the mode places on one host of
// a topology of kind topology, the bound both a scenario's check and the
// build hold to: HostEndpoints, except in VM guests and, for endpoints on
// the wire, on the routed topology's per-host segments, which number
// from the host's first subnet only.
func (d Descriptor) EndpointsPerHost(topology string) int {
	if d.HostEndpoints == 0 || topo.IsVM(topology) || (d.Addresses == topo.WireAddresses && topo.RoutesSegments(topology)) {
		return topo.BaseEndpointsPerHost
	}
	return min(d.HostEndpoints, topo.HostCapacity(1))
}

// Guests is what a mode needs of VM guests.
type Guests struct {
	// Build is true for a mode the guest's agent builds inside the guest.
	Build bool
	// Modules are the guest kernel's modules the mode's links need.
	Modules []string
	// Why a mode is not built in guests; empty says only that guests
	// build the others.
	Why string
	// Supports rules out VM topologies where the mode cannot work by its
	// nature, beyond what Supports rules out; nil rules out none.
	Supports func(topology string) error
}

// Check reports whether a case of this mode in the topology can be built
// here: nil, or an error wrapping ErrUnsupported that says why not.
func (d Descriptor) Check(topology string) error {
	if topo.IsVM(topology) {
		return d.checkVM(topology)
	}
	if err := d.Available(); err != nil {
		return err
	}
	if d.Supports != nil {
		return d.Supports(topology)
	}
	return nil
}

// CheckFamily says why the mode cannot be built with addresses of family
// f in a topology of kind topology, or nil.
func (d Descriptor) CheckFamily(f topo.Family, topology string) error {
	switch {
	case !f.Has6():
		return nil
	case topo.IsVM(topology):
		return fmt.Errorf("%w: family %s: the VM guests' agent numbers IPv4 only", ErrNotApplicable, f)
	case !d.IPv6:
		return fmt.Errorf("%w: family %s: cnbench builds %s with IPv4 only", ErrNotApplicable, f, d.Name)
	}
	return nil
}

// ErrUnsupported marks a mode, or a part of one, that this machine cannot
// build; cases that need it are skipped, not failed.
var ErrUnsupported = errors.New("unsupported on this machine")

// ErrNotApplicable marks a mode that cannot work in a topology by its
// nature, whatever the machine: macvlan's private mode keeps the two
// endpoints of chc apart. It wraps ErrUnsupported, so such cases are
// skipped too.
var ErrNotApplicable error = &kindOfError{"not applicable", ErrUnsupported}

type kindOfError struct {
	msg    string
	parent error
}

func (e *kindOfError) Error() string { return e.msg }
func (e *kindOfError) Unwrap() error { return e.parent }

// NotApplicable is an error wrapping ErrNotApplicable with the reason.
func NotApplicable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotApplicable, fmt.Sprintf(format, args...))
}

// Unsupported is an error wrapping ErrUnsupported with the reason.
func Unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

// ErrPortTaken marks a port that Expose cannot publish because its host
// already publishes it for another endpoint: servers in namespaces of
// their own pick their ports apart, and two may pick the same. The
// server listens again on another port.
var ErrPortTaken = errors.New("port already published on the host")

// ErrBadInput marks a mode whose input, a file the user named, cannot be
// used: it is refused before anything is built, not skipped.
var ErrBadInput = errors.New("bad input")

// BadInput is an error wrapping ErrBadInput around what is wrong.
func BadInput(err error) error { return fmt.Errorf("%w: %w", ErrBadInput, err) }

// Always is the Available of a mode every machine can build.
func Always() error { return nil }
