package engine

// receiveBufferSize is the read size on the receiving side; large reads
// keep the system call count per gigabyte low.
const receiveBufferSize = 256 << 10

// streamReceiveLowWater is how many bytes a socket of a stream read
// through epoll (more flows than CPUs, see receivePool) holds before epoll
// reports it and the kernel wakes its reader. Waking a reader that sleeps
// on another CPU takes an interrupt between CPUs, which the sending CPU
// pays for inside the softirq that queued the data; in a virtual machine
// each costs about 12 µs there. A reader that drains its sockets faster
// than they fill sleeps, and is woken, once per segment: four flows pinned
// on a veth pair sent 10.4 GB in 4 s with 46,000 such interrupts, and
// 13.5 GB with 38,000 once the reader slept until 64 KiB had arrived (32
// KiB: 9.4 GB). iperf3 sets no low-water mark; its reader is woken as
// often but, polling with select(), stays awake longer between wake-ups.
// A blocking reader of one flow keeps no mark: over loopback, whose
// segments are 64 KiB, one flow sent 7.4 GB in 4 s with it and 9.1 GB
// without. The kernel still wakes the reader below the mark at the end of
// the stream and when the receive buffer runs short, so no byte waits for
// ever.
const streamReceiveLowWater = 64 << 10

// streamLowWater is the low-water mark for a pooled stream socket with
// options o: a quarter of a receive buffer the run fixed, if that is
// smaller, so that the buffer always holds the mark several times over.
func streamLowWater(o SocketOptions) int {
	if o.ReceiveBuffer > 0 {
		return max(1, min(streamReceiveLowWater, o.ReceiveBuffer/4))
	}
	return streamReceiveLowWater
}

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
