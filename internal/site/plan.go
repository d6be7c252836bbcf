package site

import (
	"errors"
	"fmt"

	"cnbench/internal/cluster"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/modes"
	"cnbench/internal/netns"
	"cnbench/internal/pinning"
	"cnbench/internal/topo"
	"cnbench/internal/units"
	"cnbench/internal/workload"
)

// Plan is what building a case's path takes, once the machine is known
// to be able to build it.
type Plan struct {
	Mode                     mode.Descriptor
	SenderCPUs, ReceiverCPUs []int
	Opts                     topo.Options
}

// PlanFor checks that the case's mode can be built in its topology and
// resolves its placement and host controls.
func PlanFor(c *model.Case) (Plan, error) {
	d, ok := modes.Lookup(c.Mode)
	if !ok {
		return Plan{}, fmt.Errorf("unknown mode %q", c.Mode)
	}
	if err := d.Check(c.Topology); err != nil && !(OnCluster(c) && errors.Is(err, mode.ErrNeedsCluster)) {
		return Plan{}, err
	}
	sender, receiver, err := pinsOf(c.Params)
	if err != nil {
		return Plan{}, err
	}
	opts, err := topoOptions(c.Params)
	if err != nil {
		return Plan{}, err
	}
	if err := d.CheckFamily(opts.Family, c.Topology); err != nil {
		return Plan{}, err
	}
	return Plan{Mode: d, SenderCPUs: sender, ReceiverCPUs: receiver, Opts: opts}, nil
}

// OnCluster reports whether a case's mode deploys on a cluster.
func OnCluster(c *model.Case) bool {
	_, _, ok := cluster.For(c.Mode)
	return ok
}

// RecordSettings fills in the settings a case resolves to on this
// machine before it is stored: what its mode decides for itself (the OVS
// datapath), the CPUs its placement pins the engines to, the socket
// buffers of a stream of many flows (boundStreamBuffers), and whether
// its native engines serve a host each (shareEngines).
func RecordSettings(c *model.Case) {
	if c.Params.Family == "" {
		c.Params.Family = model.FamilyIPv4
	}
	shareEngines(c)
	if d, ok := modes.Lookup(c.Mode); ok && d.Record != nil {
		d.Record(&c.Params)
	}
	if pressure, err := tcpMemoryPressure(); err == nil {
		boundStreamBuffers(c, pressure)
	}
	if sender, receiver, err := pinsOf(c.Params); err == nil {
		c.Params.SenderCPUs, c.Params.ReceiverCPUs = pinning.FormatList(sender), pinning.FormatList(receiver)
	}
}

// SharedEnginesFrom is the number of endpoints on one side of a case
// (servers or clients) from which the native engine runs one process per
// host and side, unless the case says otherwise. A process per endpoint
// costs its own Go runtime and threads: at 1000 endpoints 3.7 GB of
// memory, and at 256 endpoints of 1 flow each the processes' own
// scheduling starved flows (Jain's index 0.08). Below this many the
// processes cost little and measure as they always have.
const SharedEnginesFrom = 16

// shareEngines resolves a native case that leaves its engine processes
// to the machine: per host from SharedEnginesFrom endpoints on a side,
// except tcp_crr, whose flows connect anew from their own endpoint, and
// on a cluster, where each endpoint is a container with its own engine.
func shareEngines(c *model.Case) {
	p := &c.Params
	if c.Engine != "native" || p.Engines != "" || c.Workload == workload.TCPCRR || OnCluster(c) {
		return
	}
	if servers, clients := p.Endpoints(); max(servers, clients) >= SharedEnginesFrom {
		p.Engines = model.EnginesPerHost
	}
}

// pinsOf resolves a case's placement to the CPUs of the sender (the
// client engine) and the receiver (the server engine); nil means not
// pinned. A placement the machine cannot give makes the case skipped.
func pinsOf(p model.Params) (sender, receiver []int, err error) {
	if p.Placement == "" || p.Placement == pinning.None {
		return nil, nil, nil
	}
	m, err := pinning.ReadMachine()
	if err != nil {
		return nil, nil, err
	}
	sender, receiver, err = pinning.Resolve(p.Placement, m)
	if errors.Is(err, pinning.ErrCannotHonour) {
		return nil, nil, fmt.Errorf("%w: %v", mode.ErrUnsupported, err)
	}
	return sender, receiver, err
}

// topoOptions are the host controls of a case.
func topoOptions(p model.Params) (topo.Options, error) {
	rate, err := units.ParseRate(p.NICRate)
	if p.NICRate != "" && err != nil {
		return topo.Options{}, fmt.Errorf("nic_rate %q: %w", p.NICRate, err)
	}
	family, err := topo.ParseFamily(p.Family)
	if err != nil {
		return topo.Options{}, err
	}
	return topo.Options{
		NICRateBPS: rate,
		MTU:        p.MTU,
		Offloads:   topo.Offloads{GRO: p.GRO, GSO: p.GSO, TSO: p.TSO, TxChecksum: p.TxChecksum},
		Family:     family,
	}, nil
}

// RecordAccel records, with every case of a VM topology, how guests run
// here: numbers measured under TCG measure the emulator.
func RecordAccel(c *model.Case, token netns.Token) {
	if topo.IsVM(c.Topology) && topo.VMAvailable() == nil {
		c.Params.Accel, _ = topo.Accelerator(token)
	}
}
