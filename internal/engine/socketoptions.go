package engine

import (
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Data sockets are blocking, so a peer that vanishes without a FIN or RST
// would block a flow forever; these timeouts turn that into an error.
const (
	clientSocketTimeout = 30 * time.Second
	serverSocketTimeout = 60 * time.Second
)

// applyOptions sets the socket knobs of o that are not zero on fd; tcp
// says whether the TCP-only ones apply. They must be set before connect
// or listen: the MSS and the window scale are fixed by the handshake.
//
// The buffer sizes are set with SO_SNDBUFFORCE and SO_RCVBUFFORCE where
// the engine may (CAP_NET_ADMIN), so that a size asked for is the size
// used, not silently cut to net.core.wmem_max or rmem_max.
//
// Equivalent to: setsockopt(SO_SNDBUF, SO_RCVBUF, TCP_MAXSEG, TCP_CONGESTION)
func applyOptions(fd int, o SocketOptions, tcp bool) error {
	if o.SendBuffer > 0 {
		if err := setBuffer(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, o.SendBuffer); err != nil {
			return fmt.Errorf("set send buffer %d: %w", o.SendBuffer, err)
		}
	}
	if o.ReceiveBuffer > 0 {
		if err := setBuffer(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, o.ReceiveBuffer); err != nil {
			return fmt.Errorf("set receive buffer %d: %w", o.ReceiveBuffer, err)
		}
	}
	if !tcp {
		return nil
	}
	if o.MSS > 0 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG, o.MSS); err != nil {
			return fmt.Errorf("set mss %d: %w", o.MSS, err)
		}
	}
	if o.CC != "" {
		if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, o.CC); err != nil {
			return fmt.Errorf("set congestion control %q: %w", o.CC, err)
		}
	}
	return nil
}

func setBuffer(fd, force, plain, size int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, size); err == nil {
		return nil
	}
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, size)
}

// controlOptions adapts applyOptions to the Control hook of net.Dialer
// and net.ListenConfig.
func controlOptions(o SocketOptions) func(network, address string, c syscall.RawConn) error {
	if o == (SocketOptions{}) {
		return nil
	}
	return func(network, address string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = applyOptions(int(fd), o, true) }); cerr != nil {
			return cerr
		}
		return err
	}
}

// setNoDelay turns Nagle's algorithm off (on) or back on.
//
// Equivalent to: setsockopt(TCP_NODELAY)
func setNoDelay(fd int, on bool) error {
	v := 0
	if on {
		v = 1
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, v); err != nil {
		return fmt.Errorf("set tcp_nodelay: %w", err)
	}
	return nil
}

// setTimeouts bounds every blocking send and receive on fd; zero is no
// bound.
//
// Equivalent to: setsockopt(SO_SNDTIMEO, SO_RCVTIMEO)
func setTimeouts(fd int, d time.Duration) error {
	if err := setSendTimeout(fd, d); err != nil {
		return err
	}
	return setRecvTimeout(fd, d)
}

// setSendTimeout bounds a blocking write alone.
func setSendTimeout(fd int, d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		return fmt.Errorf("set send timeout: %w", err)
	}
	return nil
}

// setRecvTimeout bounds a blocking read alone.
func setRecvTimeout(fd int, d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("set receive timeout: %w", err)
	}
	return nil
}
