package engine

// receiveBufferSize is the read size on the receiving side; large reads
// keep the system call count per gigabyte low.
const receiveBufferSize = 256 << 10

// A stream's receiving sockets keep the kernel's low-water mark of one
// byte. A mark of 64 KiB on the sockets a pooled reader drains
// (receivePool) sent four pinned flows 30% further on one machine, with a
// fifth fewer wake-ups of the reader, and held them at 0.75 to 0.87 of
// iperf3 on another of the same kind, where without it they read 0.93 to
// 1.10. There, under BBR (the machine's default), the sending core took
// 5,870 pacing timers per GB with the mark and 1,760 without: BBR releases
// a segment that may not leave yet with a timer, an interrupt on the
// sending core. docs/performance.md has both measurements.

// receiveStream counts bytes until the peer closes; flows is how many flows
// its session has.
func receiveStream(fd int, flows int, m *flowMeter, s *session) error {
	buf := make([]byte, receiveBufferSize)
	y := newYielder(flows)
	for {
		n, err := recv(fd, buf)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		now := monotonicNow()
		m.add(n, now, s)
		y.maybeYield(now)
	}
}

// sendStream writes buf repeatedly until the monotonic deadline and
// returns the bytes sent and when it stopped; flows is how many flows run
// alongside.
func sendStream(fd int, buf []byte, flows int, deadline int64) (sent, stoppedAt int64, err error) {
	y := newYielder(flows)
	for {
		now := monotonicNow()
		if now >= deadline {
			return sent, now, nil
		}
		y.maybeYield(now)
		n, err := send(fd, buf)
		sent += int64(n)
		if err != nil {
			return sent, monotonicNow(), err
		}
	}
}
