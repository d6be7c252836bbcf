package kernel

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The eBPF datapath's program runs at the tc ingress hook of every
// host-side veth and of the host's NIC. It reads the packet's IPv4
// destination and looks it up in the host's map of endpoints:
//
//   - an endpoint of this host: it writes the endpoint's MAC as the
//     destination and the host-side veth's as the source, and hands the
//     packet to the endpoint's eth0 with bpf_redirect_peer, past the
//     host's IP stack, netfilter and any bridge;
//   - an endpoint of another host: it hands the packet to the NIC with
//     bpf_redirect_neigh, which resolves the next hop's MAC by the host's
//     routes and neighbours, past the host's IP forwarding and netfilter;
//   - anything else (ARP, the host's own addresses): the host's stack,
//     as without the program.
//
// So Cilium's BPF host routing works, with the map standing for its
// endpoint map.

// routeValue is a map entry: where a destination goes.
type routeValue struct {
	// Ifindex is the host-side veth (local) or the NIC (remote).
	Ifindex uint32
	// DstMAC and SrcMAC are written into a local endpoint's frames.
	DstMAC, SrcMAC [6]byte
	// Remote is 1 for an endpoint of another host.
	Remote uint32
}

const (
	routeValueSize = 20
	tcActOK        = 0
	ethPIPBE       = 0x0008 // ETH_P_IP as the little-endian load of its big-endian bytes
	// frame is 34 bytes, the Ethernet header and IPv4's first 20, placed
	// so that the destination address (at 30) is 4-byte aligned.
	frame    = -46
	routeKey = -52 // 4 bytes: the IPv4 destination, in network order
)

// datapathProgram is the program of one host, whose map is routes.
func datapathProgram(routes *ebpf.Map) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		// bpf_skb_load_bytes(skb, 0, frame, 34)
		asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, frame),
		asm.Mov.Imm(asm.R4, 34),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "pass"),
		asm.LoadMem(asm.R1, asm.RFP, frame+12, asm.Half),
		asm.JNE.Imm(asm.R1, ethPIPBE, "pass"),
		asm.LoadMem(asm.R1, asm.RFP, frame+14+16, asm.Word),
		asm.StoreMem(asm.RFP, routeKey, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, routes.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, routeKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "pass"),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.LoadMem(asm.R1, asm.R7, 16, asm.Word),
		asm.JNE.Imm(asm.R1, 0, "remote"),
		// bpf_skb_store_bytes(skb, 0, &value.DstMAC, 12, 0)
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.Add.Imm(asm.R3, 4),
		asm.Mov.Imm(asm.R4, 12),
		asm.Mov.Imm(asm.R5, 0),
		asm.FnSkbStoreBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "pass"),
		// bpf_redirect_peer(value.Ifindex, 0)
		asm.LoadMem(asm.R1, asm.R7, 0, asm.Word),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRedirectPeer.Call(),
		asm.Return(),
		// bpf_redirect_neigh(value.Ifindex, NULL, 0, 0)
		asm.LoadMem(asm.R1, asm.R7, 0, asm.Word).WithSymbol("remote"),
		asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnRedirectNeigh.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, tcActOK).WithSymbol("pass"),
		asm.Return(),
	}
}

// loadDatapath makes a host's map and program; the kernel's verifier
// checks the program here.
func loadDatapath() (*ebpf.Map, *ebpf.Program, error) {
	routes, err := ebpf.NewMap(&ebpf.MapSpec{
		Name: "cnb_routes", Type: ebpf.Hash, KeySize: 4, ValueSize: routeValueSize, MaxEntries: 1 << 16,
	})
	if err != nil {
		return nil, nil, err
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "cnb_datapath", Type: ebpf.SchedCLS, License: "GPL",
		Instructions: datapathProgram(routes),
	})
	if err != nil {
		routes.Close()
		return nil, nil, err
	}
	return routes, prog, nil
}
