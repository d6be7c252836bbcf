package engine

import (
	"io"
	"net/netip"

	"golang.org/x/sys/unix"
)

// zeros is what responses and requests are made of; only ever read.
var zeros = make([]byte, transferBufferSize)

// runCRR runs one tcp_crr flow on the calling, locked thread: every
// transaction opens a connection, sends the header and the request in one
// write, reads the response and the server's close, and closes. Timing
// covers all of it, as netperf's TCP_CRR does. The server closes first, so
// the TIME_WAIT state stays on its side and the client never runs out of
// ephemeral ports.
func runCRR(holder *dataSocket, spec RunSpec, h connHeader, deadline int64, out *rrOutcome) error {
	ap, err := netip.ParseAddrPort(spec.Target)
	if err != nil {
		return err
	}
	sa, fam := sockaddr(ap), family(ap.Addr())
	first := append(h.marshal(), zeros[:min(spec.RequestSize, transferBufferSize-headerSize)]...)
	rest := spec.RequestSize - (len(first) - headerSize)
	response := make([]byte, min(spec.ResponseSize, transferBufferSize))
	var scrap [64]byte
	y := newYielder(spec.Flows)
	start := monotonicNow()
	for start < deadline {
		if err := crrTransaction(holder, spec, sa, fam, first, rest, response, scrap[:]); err != nil {
			holder.release()
			out.stoppedAt = monotonicNow()
			return err
		}
		holder.release()
		end := monotonicNow()
		_ = out.latency.RecordValue(min(end-start, latencyHighest))
		out.transactions++
		out.sent += int64(spec.RequestSize)
		start = end
		if y.maybeYield(end) {
			start = monotonicNow()
		}
	}
	out.stoppedAt = start
	return nil
}

// crrTransaction is one connection of a tcp_crr flow; the caller releases
// the holder's descriptor.
func crrTransaction(holder *dataSocket, spec RunSpec, sa unix.Sockaddr, fam int, first []byte, rest int, response, scrap []byte) error {
	fd, err := unix.Socket(fam, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := holder.hold(fd); err != nil {
		return err
	}
	if err := applyOptions(fd, spec.SocketOptions, true); err != nil {
		return err
	}
	if err := configureSocket(fd, !spec.Nagle, clientSocketTimeout); err != nil {
		return err
	}
	for {
		err = unix.Connect(fd, sa)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return socketError(err)
	}
	if err := sendN(fd, first, len(first)); err != nil {
		return err
	}
	if rest > 0 {
		if err := sendN(fd, zeros, rest); err != nil {
			return err
		}
	}
	if err := recvN(fd, response, spec.ResponseSize); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	for {
		n, err := recv(fd, scrap)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// serveCRR answers one tcp_crr connection on the accepting thread, with
// blocking calls, as netserver does: handing each connection to a
// goroutine of its own cost the serving engine four to six times
// netserver's CPU per connection, most of it in the runtime's scheduler,
// and half its connection rate. The socket comes with the listener's
// Nagle setting and send timeout, and the header's receive timeout; the
// caller closes it. scrap takes the request.
func serveCRR(fd int, h connHeader, scrap []byte) {
	patient := false
	for left := int(h.requestSize); left > 0; {
		n, err := recv(fd, scrap[:min(left, len(scrap))])
		if err == errSocketTimeout && !patient {
			// A request slower than the header's wait gets a flow's.
			if setRecvTimeout(fd, serverSocketTimeout) != nil {
				return
			}
			patient = true
			continue
		}
		if err != nil || n == 0 {
			return
		}
		left -= n
	}
	_ = sendN(fd, zeros, int(h.responseSize)) // a failed response fails the client's transaction
}
