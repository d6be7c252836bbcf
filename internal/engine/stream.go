package engine

import "time"

// receiveBufferSize is a pooled reader's read size (receivePool); large
// reads keep the system call count per gigabyte low.
const receiveBufferSize = 256 << 10

// A stream's receiving sockets keep the kernel's low-water mark of one
// byte. A mark of 64 KiB on the sockets a pooled reader drains
// (receivePool) sent four pinned flows 30% further on one machine, with a
// fifth fewer wake-ups of the reader, and held them at 0.75 to 0.87 of
// iperf3 on another of the same kind, where without it they read 0.93 to
// 1.10. There, under BBR (the machine's default), the sending core took
// 5,870 pacing timers per GB with the mark and 1,760 without: BBR releases
// a segment that may not leave yet with a timer, an interrupt on the
// sending core. A mark of 16 or 32 KiB on a socket read by a thread of its
// own took one flow over loopback from 0.90-1.01 of iperf3's throughput
// to 0.98-1.16, and cost one through dockerd's port-mapping proxy about as
// much (0.95 to 0.86-0.90). docs/performance.md has the measurements.

// A stream's goroutine leaves its thread once the stream begins, and each
// of its blocking system calls waits at most streamSlice. Both keep Go's
// runtime off the CPUs being measured. The runtime's monitor takes the P
// of a system call still blocked after 10 ms, and then polls every 20 µs
// for a millisecond: over OVS's userspace datapath, which drops a fifth of
// a stream's segments, 63 of 1,423 sends in 2 s blocked longer than that,
// and the sending engine's monitor woke 1,700 times a second. And a yield
// (yielder) of a goroutine locked to its thread hands its P to another
// thread and back, two futex wake-ups and four context switches, where an
// unlocked goroutine goes on on its own thread. Request/response flows
// keep their locked threads: a round trip's wake-up must find its thread
// (see keepASpareP). docs/performance.md has the measurements.
const streamSlice = 4 * time.Millisecond

// sliceCalls bounds fd's blocking calls to streamSlice for the length of
// a stream; restore puts back the flow's own timeout.
func sliceCalls(fd int, timeout time.Duration) (restore func(), err error) {
	if err := setTimeouts(fd, streamSlice); err != nil {
		return nil, err
	}
	return func() { setTimeouts(fd, timeout) }, nil
}

// streamReadSize is how much a stream's reader takes from its socket
// before it counts and waits again: iperf3's read size.
const streamReadSize = 128 << 10

// receiveStream counts bytes until the peer closes; flows is how many flows
// its session has. A peer silent for serverSocketTimeout fails the flow.
//
// It reads as iperf3's receiver does: it waits until the socket is
// readable, then reads without waiting until it holds streamReadSize or the
// socket is empty. Reading each segment with a blocking call as it came
// took one flow over loopback under BBR to 0.85-1.00 of iperf3's
// throughput, its sending core arming 8,300-8,700 pacing timers per GB
// against iperf3's 7,100-8,100; read this way, 0.90-1.07, and about as
// many timers as iperf3. docs/performance.md has the measurements.
func receiveStream(fd int, flows int, m *flowMeter, s *session) error {
	buf := make([]byte, streamReadSize)
	y := newYielder(flows)
	last := monotonicNow()
	for {
		ready, err := waitReadable(fd, streamSlice)
		if err != nil {
			return err
		}
		n, closed := 0, false
		if ready {
			n, closed, err = recvQueued(fd, buf)
		}
		now := monotonicNow()
		if n > 0 {
			m.add(n, now, s)
			last = now
		}
		if err != nil || closed {
			return err
		}
		if time.Duration(now-last) > serverSocketTimeout {
			return errSocketTimeout
		}
		y.maybeYield(now)
	}
}

// sendStream writes buf repeatedly until the monotonic deadline and
// returns the bytes sent and when it stopped; flows is how many flows run
// alongside. A socket that takes nothing for clientSocketTimeout fails
// the flow.
func sendStream(fd int, buf []byte, flows int, deadline int64) (sent, stoppedAt int64, err error) {
	restore, err := sliceCalls(fd, clientSocketTimeout)
	if err != nil {
		return 0, monotonicNow(), err
	}
	defer restore()
	y := newYielder(flows)
	last := monotonicNow()
	for {
		now := monotonicNow()
		if now >= deadline {
			return sent, now, nil
		}
		y.maybeYield(now)
		n, err := send(fd, buf)
		sent += int64(n)
		switch {
		case n > 0:
			last = now
		case err == errSocketTimeout && time.Duration(now-last) <= clientSocketTimeout:
		case err != nil:
			return sent, monotonicNow(), err
		}
	}
}
