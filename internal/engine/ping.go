package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"cnbench/internal/netns"
)

// Ping sends ICMP (ICMPv6 to an IPv6 target) echo requests from a raw
// socket, which root may open in any namespace without touching
// net.ipv4.ping_group_range; where raw sockets are refused, it falls back
// to an unprivileged ping socket.
const (
	// pingReplyWait is how long replies are awaited after the last echo.
	pingReplyWait = time.Second
	// pingPoll bounds each blocking receive, so the receiver notices the
	// end of a run.
	pingPoll        = 50 * time.Millisecond
	icmpEchoRequest = 8
	icmpEchoReply   = 0
	// ICMPv6's echo types (RFC 4443).
	icmp6EchoRequest = 128
	icmp6EchoReply   = 129
	icmpHeaderSize   = 8
	// Linux's raw ICMP filter (linux/icmp.h): a set bit drops that type.
	solRaw     = 255
	icmpFilter = 1
)

// echoKind is an IP version's echo: its message types, and whether a raw
// socket hands over the IP header (IPv4) and wants the checksum filled
// in (IPv4; the kernel sums ICMPv6 itself).
type echoKind struct {
	request, reply byte
	v6             bool
}

func echoOf(target netip.Addr) echoKind {
	if target.Is4() {
		return echoKind{request: icmpEchoRequest, reply: icmpEchoReply}
	}
	return echoKind{request: icmp6EchoRequest, reply: icmp6EchoReply, v6: true}
}

// pingSocket opens an ICMP or ICMPv6 socket connected to target, so it
// only sees what target sends; a raw one lets in echo replies only.
func pingSocket(target netip.Addr) (fd int, raw bool, err error) {
	domain, proto := unix.AF_INET, unix.IPPROTO_ICMP
	if !target.Is4() {
		domain, proto = unix.AF_INET6, unix.IPPROTO_ICMPV6
	}
	fd, err = unix.Socket(domain, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	raw = err == nil
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		fd, err = unix.Socket(domain, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, proto)
	}
	if err != nil {
		return -1, false, fmt.Errorf("icmp socket: %w", err)
	}
	if raw {
		if err := letInRepliesOnly(fd, target.Is4()); err != nil {
			unix.Close(fd)
			return -1, false, err
		}
	}
	if err := unix.Connect(fd, sockaddr(netip.AddrPortFrom(target, 0))); err != nil {
		unix.Close(fd)
		return -1, false, fmt.Errorf("connect icmp socket to %s: %w", target, err)
	}
	return fd, raw, nil
}

// letInRepliesOnly filters a raw ICMP socket's input to echo replies.
//
// Equivalent to: setsockopt(SOL_RAW, ICMP_FILTER) or
// setsockopt(IPPROTO_ICMPV6, ICMP6_FILTER), a set bit blocking its type
func letInRepliesOnly(fd int, v4 bool) error {
	if v4 {
		dropAllButReplies := ^uint32(1 << icmpEchoReply)
		if err := unix.SetsockoptInt(fd, solRaw, icmpFilter, int(int32(dropAllButReplies))); err != nil {
			return fmt.Errorf("set icmp filter: %w", err)
		}
		return nil
	}
	var f unix.ICMPv6Filter
	for i := range f.Data {
		f.Data[i] = ^uint32(0)
	}
	f.Data[icmp6EchoReply>>5] &^= 1 << (icmp6EchoReply & 31)
	if err := unix.SetsockoptICMPv6Filter(fd, unix.IPPROTO_ICMPV6, unix.ICMPV6_FILTER, &f); err != nil {
		return fmt.Errorf("set icmpv6 filter: %w", err)
	}
	return nil
}

// pingState is shared by a ping run's sender and receiver threads.
type pingState struct {
	sent     atomic.Int64
	lastSend atomic.Int64
	finished atomic.Bool
	// answered marks the echoes replied to, one bit each.
	answered []uint64
}

// ping sends echoes to spec.Target IntervalUS apart until Count are sent
// or the duration ends, and waits up to pingReplyWait for the replies.
func (e *engine) ping(spec RunSpec) (Response, error) {
	target, err := netip.ParseAddr(spec.Target)
	if err != nil {
		return Response{}, fmt.Errorf("ping target %q: %w", spec.Target, err)
	}
	var fd int
	var raw bool
	err = netns.DoAt(spec.Netns, func() (err error) {
		fd, raw, err = pingSocket(target)
		return err
	})
	if err != nil {
		return Response{}, err
	}
	sock, err := e.sockets.adopt(fd)
	if err != nil {
		return Response{}, err
	}
	defer sock.close()
	if err := setTimeouts(fd, pingPoll); err != nil {
		return Response{}, err
	}
	gap := spec.IntervalUS * int64(time.Microsecond)
	limit := int64(spec.Count)
	if limit == 0 {
		limit = spec.DurationMS*int64(time.Millisecond)/gap + 1
	}
	limit = min(limit, MaxPingCount)
	st := &pingState{answered: make([]uint64, (limit+63)/64)}
	id := uint16(rand.Uint32())
	kind := echoOf(target)

	var wg sync.WaitGroup
	var sendErr error
	var got pingReplies
	got.latency = newLatencyHistogram()
	began := monotonicNow()
	deadline := began + spec.DurationMS*int64(time.Millisecond)
	wg.Go(func() {
		defer holdP()()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		sendErr = sendEchoes(fd, raw, kind, id, spec.MsgSize, gap, limit, began, deadline, st)
		st.finished.Store(true)
	})
	wg.Go(func() {
		defer holdP()()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		receiveReplies(fd, raw, kind, id, spec.MsgSize, st, &got, e.sockets)
	})
	wg.Wait()
	if sendErr != nil {
		return Response{}, fmt.Errorf("ping %s: %w", target, sendErr)
	}
	sent := st.sent.Load()
	resp := Response{
		SentPackets:  sent,
		Transactions: got.count,
		Lost:         max(0, sent-got.count),
		ElapsedNS:    st.lastSend.Load() - began,
	}
	if got.count > 0 {
		n := float64(got.count)
		avg := got.sum / n
		resp.RTT = &RTTStats{Min: got.min, Avg: avg, Max: got.max, Mdev: math.Sqrt(max(0, got.sumSq/n-avg*avg))}
		encoded, err := got.latency.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return Response{}, fmt.Errorf("encode latency histogram: %w", err)
		}
		resp.LatencyHDR = string(encoded)
	}
	return resp, nil
}

// sendEchoes sends the echoes on schedule. The payload carries the echo's
// index and send time, as ping's does, so a reply needs no lookup.
func sendEchoes(fd int, raw bool, kind echoKind, id uint16, payload int, gap, limit, began, deadline int64, st *pingState) error {
	pkt := make([]byte, icmpHeaderSize+payload)
	pkt[0] = kind.request
	binary.BigEndian.PutUint16(pkt[4:], id)
	for i := int64(0); i < limit; i++ {
		due := began + i*gap
		if i > 0 && due >= deadline {
			break
		}
		if now := monotonicNow(); due > now {
			sleepNS(due - now)
		}
		now := monotonicNow()
		binary.BigEndian.PutUint16(pkt[6:], uint16(i))
		binary.LittleEndian.PutUint64(pkt[8:], uint64(i))
		binary.LittleEndian.PutUint64(pkt[16:], uint64(now))
		if raw && !kind.v6 {
			pkt[2], pkt[3] = 0, 0
			binary.BigEndian.PutUint16(pkt[2:], checksum(pkt))
		}
		st.lastSend.Store(now)
		st.sent.Store(i + 1)
		if _, err := send(fd, pkt); err != nil && !errors.Is(err, unix.ENOBUFS) && !errors.Is(err, unix.EHOSTUNREACH) {
			return err
		}
	}
	return nil
}

// pingReplies are the round trips of the echoes answered, in ns.
type pingReplies struct {
	count                int64
	min, max, sum, sumSq float64
	latency              *hdrhistogram.Histogram
}

// receiveReplies reads replies until every echo is answered or the wait
// after the last one is over.
func receiveReplies(fd int, raw bool, kind echoKind, id uint16, payload int, st *pingState, got *pingReplies, set *socketSet) {
	buf := make([]byte, 60+icmpHeaderSize+payload+1)
	for {
		if st.finished.Load() {
			if got.count >= st.sent.Load() || monotonicNow()-st.lastSend.Load() > int64(pingReplyWait) {
				return
			}
		}
		n, err := recv(fd, buf)
		if err != nil || n == 0 {
			if set.isStopped() {
				return
			}
			continue
		}
		now := monotonicNow()
		msg := buf[:n]
		if raw {
			// A raw IPv4 socket hands over the IP header too; an ICMPv6
			// one does not.
			if !kind.v6 {
				ihl := int(msg[0]&0x0f) * 4
				if ihl < 20 || ihl > n {
					continue
				}
				msg = msg[ihl:]
			}
			if len(msg) < icmpHeaderSize || binary.BigEndian.Uint16(msg[4:]) != id {
				continue
			}
		}
		if len(msg) < icmpHeaderSize+MinPingPayload || msg[0] != kind.reply {
			continue
		}
		index := int64(binary.LittleEndian.Uint64(msg[8:]))
		sentAt := int64(binary.LittleEndian.Uint64(msg[16:]))
		if index < 0 || index >= st.sent.Load() || uint16(index) != binary.BigEndian.Uint16(msg[6:]) {
			continue
		}
		word, bit := index/64, uint64(1)<<(index%64)
		if st.answered[word]&bit != 0 {
			continue // a duplicate
		}
		st.answered[word] |= bit
		rtt := float64(now - sentAt)
		if got.count == 0 || rtt < got.min {
			got.min = rtt
		}
		got.max = max(got.max, rtt)
		got.sum += rtt
		got.sumSq += rtt * rtt
		got.count++
		_ = got.latency.RecordValue(min(now-sentAt, latencyHighest))
	}
}

// checksum is the Internet checksum (RFC 1071) of b.
func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}
