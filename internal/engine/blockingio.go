package engine

// The data path's system calls: a connection taken out of Go's netpoller,
// then one blocking send or receive per message.

import (
	"errors"
	"fmt"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

var errSocketTimeout = errors.New("socket timed out")

// detach takes a connection or a listener out of Go's netpoller: it
// duplicates the descriptor, closes Go's socket and puts the duplicate in
// blocking mode, so the data path can make one plain system call per
// message or connection.
func detach(conn interface {
	syscall.Conn
	Close() error
}) (int, error) {
	defer conn.Close()
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("detach socket: %w", err)
	}
	fd := -1
	var dupErr error
	if err := raw.Control(func(s uintptr) {
		fd, dupErr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, fmt.Errorf("detach socket: %w", err)
	}
	if dupErr != nil {
		return -1, fmt.Errorf("detach socket: dup: %w", dupErr)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("detach socket: set blocking: %w", err)
	}
	return fd, nil
}

// send writes once. MSG_NOSIGNAL turns a reset peer into EPIPE instead of
// a SIGPIPE delivered to the process. It calls sendto(2) directly: the
// wrappers either hide partial writes (Sendto) or build a msghdr the kernel
// must copy in again on every call (SendmsgN).
func send(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])),
			uintptr(len(p)), unix.MSG_NOSIGNAL, 0, 0)
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		}
		return 0, socketError(errno)
	}
}

// waitReadable waits up to timeout for fd to have data, an end or an
// error to read.
func waitReadable(fd int, timeout time.Duration) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(timeout/time.Millisecond))
		switch err {
		case nil:
			return n > 0, nil
		case unix.EINTR:
			continue
		}
		return false, fmt.Errorf("poll: %w", err)
	}
}

// recvQueued reads what fd holds into buf without waiting, until buf is
// full or the socket is empty, and says whether the peer has closed.
func recvQueued(fd int, buf []byte) (n int, closed bool, err error) {
	for n < len(buf) {
		p := buf[n:]
		r, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&p[0])),
			uintptr(len(p)), unix.MSG_DONTWAIT, 0, 0)
		switch {
		case errno == unix.EINTR:
		case errno == unix.EAGAIN:
			return n, false, nil
		case errno != 0:
			return n, false, errno
		case r == 0:
			return n, true, nil
		default:
			n += int(r)
		}
	}
	return n, false, nil
}

// recv reads once; 0 bytes with a nil error means the peer closed.
func recv(fd int, p []byte) (int, error) {
	for {
		n, err := unix.Read(fd, p)
		if err == unix.EINTR {
			continue
		}
		if n < 0 {
			n = 0
		}
		return n, socketError(err)
	}
}

// sendN writes n bytes, repeating buf as often as needed.
func sendN(fd int, buf []byte, n int) error {
	for n > 0 {
		w, err := send(fd, buf[:min(n, len(buf))])
		if err != nil {
			return err
		}
		n -= w
	}
	return nil
}

func socketError(err error) error {
	if err == unix.EAGAIN {
		return errSocketTimeout
	}
	return err
}

// drainUntilClosed waits for the peer's FIN after our own, so that all our
// data has been delivered before a run reports. Anything the peer still
// sends is discarded.
func drainUntilClosed(fd int) error {
	if err := unix.Shutdown(fd, unix.SHUT_WR); err != nil {
		return fmt.Errorf("shutdown write: %w", err)
	}
	var scrap [4096]byte
	for {
		n, err := recv(fd, scrap[:])
		if err != nil {
			return fmt.Errorf("wait for peer close: %w", err)
		}
		if n == 0 {
			return nil
		}
	}
}

// retransmits reads the socket's lifetime retransmitted segments and
// bytes.
func retransmits(fd int) (segments, bytes int64, ok bool) {
	info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return 0, 0, false
	}
	return int64(info.Total_retrans), int64(info.Bytes_retrans), true
}
