package engine

import (
	"errors"
	"io"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histogram geometry: 1 ns to 60 s at 3 significant figures.
const (
	latencyLowest  = 1
	latencyHighest = 60_000_000_000
	latencyDigits  = 3
)

func newLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(latencyLowest, latencyHighest, latencyDigits)
}

// transferBufferSize caps the buffers of one transaction direction; larger
// messages are moved in several system calls.
const transferBufferSize = 256 << 10

var errTruncatedRequest = errors.New("peer closed in the middle of a request")

// recvN reads exactly n bytes into buf-sized pieces. It reports io.EOF
// only if the peer closed before the first byte.
func recvN(fd int, buf []byte, n int) error {
	for got := 0; got < n; {
		r, err := recv(fd, buf[:min(n-got, len(buf))])
		if err != nil {
			return err
		}
		if r == 0 {
			if got == 0 {
				return io.EOF
			}
			return io.ErrUnexpectedEOF
		}
		got += r
	}
	return nil
}

// recvRequest is recvN for the serving side, which counts what it reads.
func recvRequest(fd int, buf []byte, n int, m *flowMeter, s *session, y *yielder) error {
	for got := 0; got < n; {
		r, err := recv(fd, buf[:min(n-got, len(buf))])
		if err != nil {
			return err
		}
		if r == 0 {
			if got == 0 {
				return io.EOF
			}
			return io.ErrUnexpectedEOF
		}
		now := monotonicNow()
		m.add(r, now, s)
		y.maybeYield(now)
		got += r
	}
	return nil
}

// serveRR answers transactions until the peer closes between two of them.
func serveRR(fd int, h connHeader, m *flowMeter, s *session) error {
	requestSize, responseSize := int(h.requestSize), int(h.responseSize)
	request := make([]byte, min(requestSize, transferBufferSize))
	response := make([]byte, min(responseSize, transferBufferSize))
	y := newYielder(int(h.flowCount))
	for {
		switch err := recvRequest(fd, request, requestSize, m, s, &y); err {
		case nil:
		case io.EOF:
			return nil
		case io.ErrUnexpectedEOF:
			return errTruncatedRequest
		default:
			return err
		}
		if err := sendN(fd, response, responseSize); err != nil {
			return err
		}
		m.transactions++
	}
}

// rrOutcome is one client flow's share of a tcp_rr run.
type rrOutcome struct {
	sent, transactions, stoppedAt int64
	latency                       *hdrhistogram.Histogram
}

// runRR keeps one transaction outstanding until the monotonic deadline,
// recording each round trip in out.latency.
func runRR(fd int, spec RunSpec, deadline int64, out *rrOutcome) error {
	request := make([]byte, min(spec.RequestSize, transferBufferSize))
	response := make([]byte, min(spec.ResponseSize, transferBufferSize))
	y := newYielder(spec.Flows)
	// The previous transaction's end is the next one's start, which saves
	// a clock read per transaction.
	start := monotonicNow()
	for start < deadline {
		if err := sendN(fd, request, spec.RequestSize); err != nil {
			out.stoppedAt = monotonicNow()
			return err
		}
		out.sent += int64(spec.RequestSize)
		if err := recvN(fd, response, spec.ResponseSize); err != nil {
			out.stoppedAt = monotonicNow()
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		end := monotonicNow()
		// Values beyond the histogram's range are clamped, not dropped,
		// so the count always matches the transactions.
		_ = out.latency.RecordValue(min(end-start, latencyHighest))
		out.transactions++
		start = end
		if y.maybeYield(end) {
			start = monotonicNow()
		}
	}
	out.stoppedAt = start
	return nil
}
