package engine

// receiveBufferSize is the read size on the receiving side; large reads
// keep the system call count per gigabyte low.
const receiveBufferSize = 256 << 10

// receiveStream counts bytes until the peer closes.
func receiveStream(fd int, m *flowMeter, s *session) error {
	buf := make([]byte, receiveBufferSize)
	var y yielder
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
// returns the bytes sent and when it stopped.
func sendStream(fd int, buf []byte, deadline int64) (sent, stoppedAt int64, err error) {
	var y yielder
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
