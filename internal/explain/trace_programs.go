package explain

import (
	"github.com/cilium/ebpf/asm"
)

// Event kinds, as the programs write them.
const (
	eventSend  = 1 // tcp:tcp_sendmsg_locked: TCP starts sending a message
	eventTx    = 2 // net:net_dev_queue: a device is handed the packet
	eventRx    = 3 // net:netif_receive_skb: a device's receive path has it
	eventReady = 4 // sock:sk_data_ready: the receiving socket is told
	eventRead  = 5 // sock:sock_recv_length: the application's read returns
)

// The event every program writes to the ring buffer, 48 bytes at the
// bottom of the program's stack (offsets from the frame pointer):
//
//	-48 u64 time (CLOCK_MONOTONIC ns)
//	-40 u64 key: the sk_buff's or the socket's address
//	-32 u32 network namespace inode
//	-28 u16 source or local port, -26 u16 destination or remote port
//	-24 u8 kind, -23 u8 IP protocol, -22 u16 zero
//	-20 u32 payload bytes (packets) or bytes read (reads)
//	-16 [16]byte device name (packets)
const (
	evTime   = -48
	evKey    = -40
	evNetns  = -32
	evSport  = -28
	evDport  = -26
	evKind   = -24
	evProto  = -23
	evLen    = -20
	evDev    = -16
	evSize   = 48
	scratch  = -56  // 8 bytes a helper reads a pointer into
	scratch2 = -64  // 8 more
	ipHeader = -104 // 40 bytes: an IPv6 header, or IPv4's fixed part and more
	l4Header = -120 // 16 bytes: TCP's first 16 or UDP's 8 and more
)

// traceMaps are the maps the programs use: the namespaces whose packets
// count and the ring buffer events go to.
type traceMaps struct {
	netns, events int
}

// window limits tracing to one window of 2^shift ns in every 2^(shift+
// bits): a request/response exchange makes about ten events per
// transaction, and tracing every one would cost the case more than the
// stages it measures. Trails cut by a window's end are incomplete and
// dropped.
type window struct{ shift, bits int32 }

// same reports whether times a and b (ns) fall in one traced window;
// without windows every event is traced and any two do.
func (w window) same(a, b uint64) bool {
	return w.bits == 0 || a>>w.shift == b>>w.shift
}

// prologue reads the time into r9 and leaves the program outside the
// tracing window; it zeroes the event and stores time, key (from src)
// and kind.
func prologue(w window, key asm.Register, kind int64) asm.Instructions {
	insns := asm.Instructions{
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R9, asm.R0),
	}
	if w.bits > 0 {
		insns = append(insns,
			asm.Mov.Reg(asm.R1, asm.R9),
			asm.RSh.Imm(asm.R1, w.shift),
			asm.And.Imm(asm.R1, (1<<w.bits)-1),
			asm.JNE.Imm(asm.R1, 0, "exit"),
		)
	}
	insns = append(insns, asm.Mov.Imm(asm.R1, 0))
	for off := int16(evTime); off < 0; off += 8 {
		insns = append(insns, asm.StoreMem(asm.RFP, off, asm.R1, asm.DWord))
	}
	return append(insns,
		asm.StoreMem(asm.RFP, evTime, asm.R9, asm.DWord),
		asm.StoreMem(asm.RFP, evKey, key, asm.DWord),
		asm.StoreImm(asm.RFP, evKind, kind, asm.Byte),
	)
}

// readKernel copies size bytes at base+off to the stack at dst; a
// failed read ends the program.
func readKernel(dst int16, size int32, base asm.Register, off int32) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R3, base),
		asm.Add.Imm(asm.R3, off),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, int32(dst)),
		asm.Mov.Imm(asm.R2, size),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "exit"),
	}
}

// namespaceFilter reads the namespace inode of the struct net whose
// pointer is at base+off into the event and ends the program unless the
// namespace is one of the case's.
func namespaceFilter(m traceMaps, o kernelOffsets, base asm.Register, off int32) asm.Instructions {
	insns := readKernel(scratch, 8, base, off)
	insns = append(insns,
		asm.LoadMem(asm.R8, asm.RFP, scratch, asm.DWord),
		asm.JEq.Imm(asm.R8, 0, "exit"),
	)
	insns = append(insns, readKernel(evNetns, 4, asm.R8, o.netInum)...)
	return append(insns,
		asm.LoadMapPtr(asm.R1, m.netns),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, evNetns),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
	)
}

// epilogue writes the event to the ring buffer, without waking its
// reader, and returns.
func epilogue(m traceMaps) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, m.events),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, evTime),
		asm.Mov.Imm(asm.R3, evSize),
		asm.Mov.Imm(asm.R4, 1), // BPF_RB_NO_WAKEUP: the reader polls
		asm.FnRingbufOutput.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	}
}

// packetProgram is the program of a device tracepoint whose first
// argument is the sk_buff: it writes an event for a TCP or UDP packet
// with payload, over IPv4 or IPv6, on a device of one of the case's
// namespaces.
func packetProgram(m traceMaps, o kernelOffsets, w window, kind int64) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, 0, asm.DWord), // the sk_buff
	}
	insns = append(insns, prologue(w, asm.R7, kind)...)
	// The device: its name, and its namespace.
	insns = append(insns, readKernel(scratch, 8, asm.R7, o.skbDev)...)
	insns = append(insns,
		asm.LoadMem(asm.R6, asm.RFP, scratch, asm.DWord),
		asm.JEq.Imm(asm.R6, 0, "exit"),
	)
	insns = append(insns, readKernel(evDev, 16, asm.R6, o.devName)...)
	insns = append(insns, namespaceFilter(m, o, asm.R6, o.devNet)...)
	// The network header: head + network_header.
	insns = append(insns, readKernel(scratch, 8, asm.R7, o.skbHead)...)
	insns = append(insns, readKernel(scratch2, 2, asm.R7, o.skbNetworkHeader)...)
	insns = append(insns,
		asm.LoadMem(asm.R8, asm.RFP, scratch, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, scratch2, asm.Half),
		asm.JEq.Imm(asm.R1, 0xffff, "exit"), // not set
		asm.Add.Reg(asm.R8, asm.R1),
	)
	insns = append(insns, readKernel(ipHeader, 40, asm.R8, 0)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.RFP, ipHeader, asm.Byte),
		asm.RSh.Imm(asm.R1, 4),
		asm.JEq.Imm(asm.R1, 6, "ipv6"),
		asm.JNE.Imm(asm.R1, 4, "exit"),
		// IPv4: header length from IHL, protocol, total length.
		asm.LoadMem(asm.R2, asm.RFP, ipHeader, asm.Byte),
		asm.And.Imm(asm.R2, 0xf),
		asm.LSh.Imm(asm.R2, 2),
		asm.LoadMem(asm.R9, asm.RFP, ipHeader+9, asm.Byte),
		asm.LoadMem(asm.R6, asm.RFP, ipHeader+2, asm.Half),
		asm.HostTo(asm.BE, asm.R6, asm.Half),
		asm.Sub.Reg(asm.R6, asm.R2),
		asm.Ja.Label("transport"),
		// IPv6: a fixed 40-byte header; extension headers are not followed.
		asm.Mov.Imm(asm.R2, 40).WithSymbol("ipv6"),
		asm.LoadMem(asm.R9, asm.RFP, ipHeader+6, asm.Byte),
		asm.LoadMem(asm.R6, asm.RFP, ipHeader+4, asm.Half),
		asm.HostTo(asm.BE, asm.R6, asm.Half),
		// r6: transport length, r9: protocol, r8+r2: transport header.
		asm.JEq.Imm(asm.R9, 6, "known").WithSymbol("transport"),
		asm.JNE.Imm(asm.R9, 17, "exit"),
		asm.StoreMem(asm.RFP, evProto, asm.R9, asm.Byte).WithSymbol("known"),
		asm.Add.Reg(asm.R8, asm.R2),
	)
	insns = append(insns, readKernel(l4Header, 16, asm.R8, 0)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.RFP, l4Header, asm.Half),
		asm.HostTo(asm.BE, asm.R1, asm.Half),
		asm.StoreMem(asm.RFP, evSport, asm.R1, asm.Half),
		asm.LoadMem(asm.R1, asm.RFP, l4Header+2, asm.Half),
		asm.HostTo(asm.BE, asm.R1, asm.Half),
		asm.StoreMem(asm.RFP, evDport, asm.R1, asm.Half),
		// Payload: less TCP's data offset, or UDP's 8-byte header.
		asm.Mov.Imm(asm.R1, 8),
		asm.JNE.Imm(asm.R9, 6, "payload"),
		asm.LoadMem(asm.R1, asm.RFP, l4Header+12, asm.Byte),
		asm.RSh.Imm(asm.R1, 4),
		asm.LSh.Imm(asm.R1, 2),
		asm.Sub.Reg(asm.R6, asm.R1).WithSymbol("payload"),
		asm.JSLE.Imm(asm.R6, 0, "exit"),
		asm.StoreMem(asm.RFP, evLen, asm.R6, asm.Word),
	)
	return append(insns, epilogue(m)...)
}

// socketProgram is the program of a socket tracepoint whose first
// argument is the sock: it writes an event for a TCP or UDP socket of
// one of the case's namespaces. A read's event needs the second
// argument, the bytes read, above zero.
func socketProgram(m traceMaps, o kernelOffsets, w window, kind int64) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R7, asm.R1, 0, asm.DWord), // the sock
	}
	if kind == eventRead {
		// A program may not read past its tracepoint's arguments.
		insns = append(insns, asm.LoadMem(asm.R6, asm.R1, 8, asm.DWord))
	}
	insns = append(insns, prologue(w, asm.R7, kind)...)
	if kind == eventRead {
		insns = append(insns,
			asm.LSh.Imm(asm.R6, 32),
			asm.ArSh.Imm(asm.R6, 32),
			asm.JSLE.Imm(asm.R6, 0, "exit"),
			asm.StoreMem(asm.RFP, evLen, asm.R6, asm.Word),
		)
	}
	insns = append(insns, namespaceFilter(m, o, asm.R7, o.skNet)...)
	insns = append(insns, readKernel(scratch, 2, asm.R7, o.skFamily)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.RFP, scratch, asm.Half),
		asm.JEq.Imm(asm.R1, 2, "inet"),
		asm.JNE.Imm(asm.R1, 10, "exit"),
	)
	rest := readKernel(scratch, 2, asm.R7, o.skProtocol)
	rest[0] = rest[0].WithSymbol("inet")
	insns = append(insns, rest...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.RFP, scratch, asm.Half),
		asm.JEq.Imm(asm.R1, 6, "known"),
		asm.JNE.Imm(asm.R1, 17, "exit"),
		asm.StoreMem(asm.RFP, evProto, asm.R1, asm.Byte).WithSymbol("known"),
	)
	insns = append(insns, readKernel(evSport, 2, asm.R7, o.skNum)...) // host order
	insns = append(insns, readKernel(scratch, 2, asm.R7, o.skDport)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.RFP, scratch, asm.Half),
		asm.HostTo(asm.BE, asm.R1, asm.Half),
		asm.StoreMem(asm.RFP, evDport, asm.R1, asm.Half),
	)
	return append(insns, epilogue(m)...)
}
