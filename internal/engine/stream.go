package engine

// receiveBufferSize is the read size on the receiving side; large reads
// keep the system call count per gigabyte low.
const receiveBufferSize = 256 << 10

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
