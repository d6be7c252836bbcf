package kernel

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The eBPF datapath's program runs at the tc ingress hook of every
// host-side veth and of the host's NIC. It reads the packet's IPv4
// destination, or an IPv6 one in the plan's 2001:2::/96 (whose last 32
// bits are its IPv4 twin's, see topo), and looks its 32 bits up in the
// host's map of endpoints, so one entry serves both versions:
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
	// ETH_P_IP and ETH_P_IPV6 as the little-endian loads of their
	// big-endian bytes.
	ethPIPBE   = 0x0008
	ethPIPv6BE = 0xdd86
	// frame holds the Ethernet header and IPv4's first 20 bytes (34), or
	// IPv6's first 40 (54), placed so that the destination address (at 30
	// or 38) is 4-byte aligned.
	frame     = -70
	frameIPv4 = 14 + 20
	frameIPv6 = 14 + 40
	routeKey  = -76 // 4 bytes: the IPv4 destination (or twin), in network order
	// plan6Word0 is 2001:0002, the first 32 bits of the IPv6 plan's
	// 2001:2::/96, as the little-endian load of its bytes; the next 64
	// bits are zero.
	plan6Word0 = 0x02000120
)

// datapathProgram is the program of one host, whose map is routes.
func datapathProgram(routes *ebpf.Map) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
	}
	insns = append(insns, loadFrame(frameIPv4)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.RFP, frame+12, asm.Half),
		asm.JEq.Imm(asm.R1, ethPIPBE, "ipv4"),
		asm.JNE.Imm(asm.R1, ethPIPv6BE, "pass"),
	)
	// IPv6: the longer header, then the destination's first 96 bits
	// must be the plan's.
	insns = append(insns, loadFrame(frameIPv6)...)
	return append(insns,
		asm.LoadMem(asm.R1, asm.RFP, frame+14+24, asm.Word),
		asm.JNE.Imm(asm.R1, plan6Word0, "pass"),
		asm.LoadMem(asm.R1, asm.RFP, frame+14+28, asm.Word),
		asm.JNE.Imm(asm.R1, 0, "pass"),
		asm.LoadMem(asm.R1, asm.RFP, frame+14+32, asm.Word),
		asm.JNE.Imm(asm.R1, 0, "pass"),
		asm.LoadMem(asm.R1, asm.RFP, frame+14+36, asm.Word),
		asm.Ja.Label("lookup"),
		asm.LoadMem(asm.R1, asm.RFP, frame+14+16, asm.Word).WithSymbol("ipv4"),
		asm.StoreMem(asm.RFP, routeKey, asm.R1, asm.Word).WithSymbol("lookup"),
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
	)
}

// loadFrame copies the packet's first n bytes to frame, and lets a
// packet shorter than that pass.
//
// Equivalent to: if (bpf_skb_load_bytes(skb, 0, frame, n)) return TC_ACT_OK;
func loadFrame(n int32) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, frame),
		asm.Mov.Imm(asm.R4, n),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "pass"),
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
