package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Every datagram of a UDP flow starts with the engine's own header, so
// the receiver can tell flows apart, count losses and reordering, and
// compute RFC 3550 interarrival jitter from the sender's timestamp.
//
//	0  magic u16 | 2 kind u8 | 3 reserved u8 | 4 flow index u32
//	8  session u64
//	16 sequence number u64 (from 0 per flow)
//	24 send time i64 (ns on the sender's monotonic clock)
//
// Little-endian: both ends are this engine on one machine's kernel, and
// the header is written once per datagram.
const (
	datagramMagic      = 0x4e43 // "CN"
	datagramHeaderSize = 32
)

// UDP flows' timing.
const (
	// udpRRTimeout is how long a udp_rr client waits for a response
	// before it counts the transaction as lost and sends the next one.
	udpRRTimeout = 200 * time.Millisecond
	// udpSettle is how long the receiver waits for a flow's datagrams
	// after its sender reported its count, when some are missing: they
	// may still sit in the socket's queue, behind the control message.
	udpSettle = 100 * time.Millisecond
	// udpTrailerSize is the sender's final count on the control
	// connection: datagrams and bytes sent, big-endian u64 each.
	udpTrailerSize = 16
)

func isUDPKind(kind uint8) bool { return kind == kindUDPStream || kind == kindUDPRR }

// putDatagramHeader writes the fixed part of the header.
func putDatagramHeader(b []byte, kind uint8, flow uint32, session uint64) {
	binary.LittleEndian.PutUint16(b[0:], datagramMagic)
	b[2] = kind
	b[3] = 0
	binary.LittleEndian.PutUint32(b[4:], flow)
	binary.LittleEndian.PutUint64(b[8:], session)
}

// stampDatagram writes the per-datagram part of the header.
func stampDatagram(b []byte, seq uint64, now int64) {
	binary.LittleEndian.PutUint64(b[16:], seq)
	binary.LittleEndian.PutUint64(b[24:], uint64(now))
}

// udpFlow is the receiving side of one UDP flow. The listener's receiver
// thread updates it under mu for every datagram; the flow's control
// connection finishes it, after which the receiver ignores it.
type udpFlow struct {
	mu           sync.Mutex
	done         bool
	responseSize int
	meter        flowMeter
	maxSeq       int64
	// perSecondMaxSeq is the highest sequence number seen by the end of
	// each second of the meter, for per-second loss.
	perSecondMaxSeq []int64
	lastTransit     int64
	haveTransit     bool
	jitter          float64 // ns, RFC 3550 6.4.1
	lastRx          int64
}

func newUDPFlow(h connHeader) *udpFlow {
	return &udpFlow{meter: flowMeter{index: h.flowIndex}, maxSeq: -1, responseSize: int(h.responseSize)}
}

// receive accounts one datagram. Callers hold f.mu.
func (f *udpFlow) receive(n int, seq uint64, sent, now int64, s *session) {
	m := &f.meter
	m.add(n, now, s)
	m.packets++
	sec := max(0, int((now-m.origin)/int64(time.Second)))
	for sec >= len(m.perSecondPackets) {
		m.perSecondPackets = append(m.perSecondPackets, 0)
		f.perSecondMaxSeq = append(f.perSecondMaxSeq, f.maxSeq)
	}
	m.perSecondPackets[sec]++
	if int64(seq) > f.maxSeq {
		f.maxSeq = int64(seq)
	} else {
		m.outOfOrder++
	}
	f.perSecondMaxSeq[sec] = f.maxSeq
	// The clocks of sender and receiver differ by a constant, which the
	// difference of two transit times cancels.
	transit := now - sent
	if f.haveTransit {
		d := transit - f.lastTransit
		if d < 0 {
			d = -d
		}
		f.jitter += (float64(d) - f.jitter) / 16
	}
	f.lastTransit, f.haveTransit = transit, true
	f.lastRx = now
}

// finish closes the flow's books once its sender has reported sent
// datagrams: from here on the receiver ignores the flow.
func (f *udpFlow) finish(sent int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return
	}
	f.done = true
	m := &f.meter
	m.sentPackets = sent
	m.lost = max(0, sent-m.packets)
	if m.packets > 0 {
		m.jitterSum, m.jitterFlows = f.jitter, 1
	}
	m.perSecondLost = make([]int64, len(m.perSecondPackets))
	prev := int64(-1)
	for i, top := range f.perSecondMaxSeq {
		m.perSecondLost[i] = max(0, top-prev-m.perSecondPackets[i])
		prev = max(prev, top)
	}
}

// progress reports the datagrams received so far and when the last came.
func (f *udpFlow) progress() (packets, lastRx int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.meter.packets, f.lastRx
}

// bindUDP opens the listener's UDP socket on the TCP listener's port.
//
// Equivalent to: socket(AF_INET, SOCK_DGRAM); bind(ADDR:PORT)
func bindUDP(ip netip.Addr, port int, o SocketOptions) (int, error) {
	fd, err := unix.Socket(family(ip), unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("udp socket: %w", err)
	}
	if err := applyOptions(fd, o, false); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Bind(fd, sockaddr(netip.AddrPortFrom(ip, uint16(port)))); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind udp %s: %w", netip.AddrPortFrom(ip, uint16(port)), err)
	}
	return fd, nil
}

func family(ip netip.Addr) int {
	if ip.Is4() || ip.Is4In6() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

func sockaddr(ap netip.AddrPort) unix.Sockaddr {
	ip := ap.Addr()
	if ip.Is4() || ip.Is4In6() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ip.Unmap().As4()}
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16()}
}

// serveUDP receives the datagrams of every UDP flow that arrives at the
// listener, on one locked thread with blocking system calls, and answers
// udp_rr requests from the same thread.
func (e *engine) serveUDP(sock *dataSocket) {
	defer e.work.Done()
	defer sock.close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, MaxDatagram+1)
	reply := make([]byte, MaxDatagram)
	var from unix.RawSockaddrAny
	var cur *session
	var lastID uint64
	y := newYielder(1)
	for {
		fromLen := uint32(unsafe.Sizeof(from))
		n, err := recvFrom(sock.fd, buf, &from, &fromLen)
		if err != nil || n == 0 {
			if e.sockets.isStopped() {
				return
			}
			// A timeout, an ICMP error for an earlier reply or an empty
			// datagram: none ends the listener.
			continue
		}
		now := monotonicNow()
		y.maybeYield(now)
		if n < datagramHeaderSize || binary.LittleEndian.Uint16(buf[0:]) != datagramMagic {
			continue
		}
		kind := buf[2]
		flowIndex := binary.LittleEndian.Uint32(buf[4:])
		id := binary.LittleEndian.Uint64(buf[8:])
		if cur == nil || id != lastID {
			cur, lastID = e.sessions.find(id), id
			if cur == nil {
				continue
			}
		}
		f := cur.udpFlow(flowIndex)
		if f == nil {
			continue
		}
		f.mu.Lock()
		if f.done {
			f.mu.Unlock()
			continue
		}
		f.receive(n, binary.LittleEndian.Uint64(buf[16:]), int64(binary.LittleEndian.Uint64(buf[24:])), now, cur)
		size := f.responseSize
		if kind == kindUDPRR {
			f.meter.transactions++
		}
		f.mu.Unlock()
		if kind == kindUDPRR {
			// The response echoes the request's header, so the client
			// can match it to its request.
			copy(reply, buf[:datagramHeaderSize])
			_ = sendTo(sock.fd, reply[:size], &from, fromLen)
		}
	}
}

func recvFrom(fd int, p []byte, from *unix.RawSockaddrAny, fromLen *uint32) (int, error) {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
			0, uintptr(unsafe.Pointer(from)), uintptr(unsafe.Pointer(fromLen)))
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		}
		return 0, socketError(errno)
	}
}

func sendTo(fd int, p []byte, to *unix.RawSockaddrAny, toLen uint32) error {
	for {
		_, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
			0, uintptr(unsafe.Pointer(to)), uintptr(toLen))
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return errno
	}
}

// serveUDPControl runs a UDP flow's control connection: it tells the
// client the flow is registered, waits for the client's final count, lets
// the datagrams still queued arrive, and closes the flow's books.
func serveUDPControl(fd int, f *udpFlow) error {
	defer f.finish(0) // a flow that failed still stops being received
	// The control connection is idle for the whole run.
	if err := setTimeouts(fd, 0); err != nil {
		return err
	}
	if err := sendN(fd, []byte{1}, 1); err != nil {
		return fmt.Errorf("send ready: %w", err)
	}
	var trailer [udpTrailerSize]byte
	if err := recvN(fd, trailer[:], udpTrailerSize); err != nil {
		return fmt.Errorf("read sender's count: %w", err)
	}
	sent := int64(binary.BigEndian.Uint64(trailer[0:]))
	if sent < 0 {
		return errors.New("sender's count out of range")
	}
	reported := monotonicNow()
	for {
		packets, lastRx := f.progress()
		if packets >= sent || monotonicNow()-max(lastRx, reported) > int64(udpSettle) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	f.finish(sent)
	return nil
}

// udpSender is what a UDP client flow did.
type udpSender struct {
	packets, bytes, lost, stoppedAt int64
}

// pacing is the gap between datagrams of one flow, in ns; 0 is unpaced.
func pacing(spec RunSpec) float64 {
	switch {
	case spec.RateBPS > 0:
		return float64(spec.MsgSize) * 8 * 1e9 / float64(spec.RateBPS)
	case spec.RatePPS > 0:
		return 1e9 / float64(spec.RatePPS)
	}
	return 0
}

// sendUDPStream sends datagrams until the monotonic deadline, at the
// offered rate if one is set. A sender that falls behind its schedule
// catches up in a burst, as iperf3 does, so the offered rate holds on
// average.
func sendUDPStream(fd int, buf []byte, spec RunSpec, deadline int64, out *udpSender) error {
	gap := pacing(spec)
	y := newYielder(spec.Flows)
	start := monotonicNow()
	var seq uint64
	for {
		now := monotonicNow()
		if now >= deadline {
			out.stoppedAt = now
			return nil
		}
		y.maybeYield(now)
		if gap > 0 {
			due := start + int64(float64(seq)*gap)
			if due > now {
				// Sleeping is coarse (tens of µs), which the catch-up
				// absorbs; at most until the deadline.
				sleepNS(min(due, deadline) - now)
				continue
			}
		}
		stampDatagram(buf, seq, now)
		n, err := send(fd, buf)
		switch {
		case err == nil:
			seq++
			out.packets++
			out.bytes += int64(n)
		case errors.Is(err, unix.ECONNREFUSED), errors.Is(err, unix.ENOBUFS):
			// An ICMP error for an earlier datagram, or a full queue: the
			// datagram is lost to the sender, not the flow.
		default:
			out.stoppedAt = monotonicNow()
			return err
		}
	}
}

func sleepNS(ns int64) {
	ts := unix.NsecToTimespec(ns)
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}

// runUDPRR keeps one datagram request outstanding until the deadline; a
// request without a response within udpRRTimeout counts as lost.
func runUDPRR(fd int, spec RunSpec, deadline int64, out *rrOutcome, sender *udpSender, request, response []byte) error {
	y := newYielder(spec.Flows)
	var seq uint64
	start := monotonicNow()
	for start < deadline {
		stampDatagram(request, seq, start)
		if _, err := send(fd, request); err != nil && !errors.Is(err, unix.ECONNREFUSED) && !errors.Is(err, unix.ENOBUFS) {
			out.stoppedAt = monotonicNow()
			return err
		}
		sender.packets++
		out.sent += int64(len(request))
		answered := false
		for {
			n, err := recv(fd, response)
			if err == errSocketTimeout || errors.Is(err, unix.ECONNREFUSED) {
				break
			}
			if err != nil {
				out.stoppedAt = monotonicNow()
				return err
			}
			// A late response to an earlier request is skipped.
			if n >= datagramHeaderSize && binary.LittleEndian.Uint64(response[16:]) == seq {
				answered = true
				break
			}
		}
		end := monotonicNow()
		seq++
		if answered {
			_ = out.latency.RecordValue(min(end-start, latencyHighest))
			out.transactions++
		} else {
			sender.lost++
		}
		start = end
		if y.maybeYield(end) {
			start = monotonicNow()
		}
	}
	out.stoppedAt = start
	return nil
}

// sendTrailer reports a UDP flow's sent datagrams and bytes on its
// control connection.
func sendTrailer(fd int, packets, bytes int64) error {
	var b [udpTrailerSize]byte
	binary.BigEndian.PutUint64(b[0:], uint64(packets))
	binary.BigEndian.PutUint64(b[8:], uint64(bytes))
	if err := sendN(fd, b[:], udpTrailerSize); err != nil {
		return fmt.Errorf("send count: %w", err)
	}
	return nil
}

// udpFlows holds the receiving side of a UDP session's flows, by index.
type udpFlows []atomic.Pointer[udpFlow]

// udpFlow returns flow i of the session, or nil.
func (s *session) udpFlow(i uint32) *udpFlow {
	if int(i) >= len(s.udp) {
		return nil
	}
	return s.udp[i].Load()
}
