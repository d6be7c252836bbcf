package kernel

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnbench/internal/mode"
	"cnbench/internal/topo"
)

// EBPF is the veth mode's endpoints with an eBPF datapath on the host, as
// Cilium's BPF host routing builds it: a tc program at the ingress of
// each host-side veth and of the NIC redirects packets to a local
// endpoint's eth0 (bpf_redirect_peer) or to the NIC toward another host
// (bpf_redirect_neigh), so they skip the host's IP stack, netfilter and
// any bridge. ARP for the gateway is answered by the host as in veth.
const EBPF = "ebpf"

type ebpfMode struct {
	vethMode
	hosts map[int]*ebpfHost
	// endpoints are every endpoint placed so far, for the maps of hosts
	// that come later.
	endpoints []ebpfEndpoint
}

// ebpfHost is one host's datapath: its map, its program and the
// program's attachments.
type ebpfHost struct {
	h      *topo.Host
	routes *ebpf.Map
	prog   *ebpf.Program
	nic    int
	closer []func() error
}

type ebpfEndpoint struct {
	host  int
	addr  netip.Addr
	local routeValue
}

var _ mode.Mode = (*ebpfMode)(nil)

func newEBPFMode(t *topo.Topology) mode.Mode {
	return &ebpfMode{vethMode: vethMode{t: t, n: Counter{}, mtu: t.MTU()}, hosts: map[int]*ebpfHost{}}
}

// Endpoint places a routed point-to-point endpoint, as veth does, and
// enters it in every host's map: as local on its own host (its veth's
// index and both MACs), as remote, through the NIC, on the others.
//
// Equivalent to the veth mode's commands, then (bpftool and tc):
//
//	tc qdisc add dev v-NAME clsact    # or a tcx link on kernels that have it
//	tc filter add dev v-NAME ingress bpf direct-action obj datapath.o
//	bpftool map update name cnb_routes key ADDR value IFINDEX EPMAC VETHMAC 0
func (m *ebpfMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	if h.Handle == nil {
		return nil, mode.Unsupported("the ebpf mode is not built inside VM guests")
	}
	ep, err := m.vethMode.Endpoint(h, name)
	if err != nil {
		return nil, err
	}
	host, err := m.host(h)
	if err != nil {
		return nil, err
	}
	hostSide, err := h.Handle.LinkByName("v-" + name)
	if err != nil {
		return nil, fmt.Errorf("find v-%s in %q: %w", name, h.NS.Name, err)
	}
	epMAC, err := endpointMAC(ep)
	if err != nil {
		return nil, err
	}
	e := ebpfEndpoint{host: h.Index, addr: ep.Addr, local: routeValue{Ifindex: uint32(hostSide.Attrs().Index)}}
	copy(e.local.DstMAC[:], epMAC)
	copy(e.local.SrcMAC[:], hostSide.Attrs().HardwareAddr)
	if err := host.attach(hostSide); err != nil {
		return nil, err
	}
	m.endpoints = append(m.endpoints, e)
	for _, other := range m.hosts {
		if err := other.enter(e); err != nil {
			return nil, err
		}
	}
	return ep, nil
}

// host is h's datapath, made on first use: its map holds every endpoint
// placed so far, and its program is on the NIC.
func (m *ebpfMode) host(h *topo.Host) (*ebpfHost, error) {
	if host, ok := m.hosts[h.Index]; ok {
		return host, nil
	}
	routes, prog, err := loadDatapath()
	if err != nil {
		return nil, fmt.Errorf("load the eBPF datapath of %q: %w", h.NS.Name, err)
	}
	host := &ebpfHost{h: h, routes: routes, prog: prog}
	m.t.OnClose(host.close)
	m.hosts[h.Index] = host
	nic, err := h.Handle.LinkByName(topo.NICName)
	if err != nil {
		return nil, fmt.Errorf("find %s in %q: %w", topo.NICName, h.NS.Name, err)
	}
	host.nic = nic.Attrs().Index
	if err := host.attach(nic); err != nil {
		return nil, err
	}
	for _, e := range m.endpoints {
		if err := host.enter(e); err != nil {
			return nil, err
		}
	}
	return host, nil
}

// enter puts an endpoint in the host's map.
func (host *ebpfHost) enter(e ebpfEndpoint) error {
	v := e.local
	if e.host != host.h.Index {
		v = routeValue{Ifindex: uint32(host.nic), Remote: 1}
	}
	if err := host.routes.Put(topo.To4(e.addr).As4(), v); err != nil {
		return fmt.Errorf("enter %s in the eBPF datapath of %q: %w", e.addr, host.h.NS.Name, err)
	}
	return nil
}

// preferTCX is false where tests take the path of kernels before tcx.
var preferTCX = true

// attach puts the host's program at l's ingress: a tcx link where the
// kernel has tcx (6.6), else a clsact qdisc's direct-action filter.
func (host *ebpfHost) attach(l netlink.Link) error {
	if !preferTCX {
		return host.attachClsact(l)
	}
	var tcx link.Link
	err := host.h.NS.Do(func() (err error) {
		tcx, err = link.AttachTCX(link.TCXOptions{Interface: l.Attrs().Index, Program: host.prog, Attach: ebpf.AttachTCXIngress})
		return err
	})
	if err == nil {
		host.closer = append(host.closer, tcx.Close)
		return nil
	}
	if !errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("attach the eBPF datapath to %s in %q: %w", l.Attrs().Name, host.h.NS.Name, err)
	}
	return host.attachClsact(l)
}

// attachClsact is attach on kernels before tcx.
//
// Equivalent to: tc qdisc add dev DEV clsact;
// tc filter add dev DEV ingress bpf direct-action fd PROG
func (host *ebpfHost) attachClsact(l netlink.Link) error {
	q := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT}, QdiscType: "clsact"}
	if err := host.h.Handle.QdiscAdd(q); err != nil {
		return fmt.Errorf("add clsact to %s in %q: %w", l.Attrs().Name, host.h.NS.Name, err)
	}
	f := &netlink.BpfFilter{
		FilterAttrs:  netlink.FilterAttrs{LinkIndex: l.Attrs().Index, Parent: netlink.HANDLE_MIN_INGRESS, Handle: 1, Protocol: unix.ETH_P_ALL, Priority: 1},
		Fd:           host.prog.FD(),
		Name:         "cnb_datapath",
		DirectAction: true,
	}
	if err := host.h.Handle.FilterAdd(f); err != nil {
		return fmt.Errorf("attach the eBPF datapath to %s in %q: %w", l.Attrs().Name, host.h.NS.Name, err)
	}
	return nil
}

// close detaches the program and frees it and its map; a clsact filter
// goes with its device when the namespace does.
func (host *ebpfHost) close() error {
	var errs []error
	for _, c := range host.closer {
		errs = append(errs, c())
	}
	errs = append(errs, host.prog.Close(), host.routes.Close())
	return errors.Join(errs...)
}

// endpointMAC is the MAC of the endpoint's eth0.
func endpointMAC(ep *topo.Endpoint) (net.HardwareAddr, error) {
	var mac net.HardwareAddr
	err := ep.NS.Do(func() error {
		ifc, err := net.InterfaceByName(endpointIfName)
		if err != nil {
			return err
		}
		mac = ifc.HardwareAddr
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s's MAC in %q: %w", endpointIfName, ep.NS.Name, err)
	}
	return mac, nil
}

// ebpfAvailable loads a program that calls the helpers the datapath
// needs; a kernel without them (before 5.10) or without BPF refuses it.
func ebpfAvailable() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "cnb_probe", Type: ebpf.SchedCLS, License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R1, 1),
			asm.Mov.Imm(asm.R2, 0),
			asm.FnRedirectPeer.Call(),
			asm.Mov.Imm(asm.R1, 1),
			asm.Mov.Imm(asm.R2, 0),
			asm.Mov.Imm(asm.R3, 0),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnRedirectNeigh.Call(),
			asm.Return(),
		},
	})
	if err != nil {
		return mode.Unsupported("the kernel does not load a tc program with bpf_redirect_peer and bpf_redirect_neigh: %v", err)
	}
	return prog.Close()
}
