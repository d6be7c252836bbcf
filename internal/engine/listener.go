package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"cnbench/internal/netns"
)

// listen starts a data listener, a TCP listener and a UDP socket on one
// port, and serves them in the background until the engine stops. The
// socket options apply to every connection and datagram socket it serves.
// Both sockets open in the namespace whose file is nsPath (netns.DoAt),
// and so do the connections the listener accepts.
func (e *engine) listen(addr string, port int, nsPath string, o SocketOptions) (int, error) {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return 0, fmt.Errorf("listen address %q: %w", addr, err)
	}
	// A wildcard would also accept traffic arriving on interfaces
	// cnbench did not assign; the engine only serves its endpoint's
	// address.
	if ip.IsUnspecified() {
		return 0, fmt.Errorf("listen address %s: refusing the wildcard address; give the endpoint's own address", addr)
	}
	// With port 0 the kernel picks a free TCP port, which UDP may hold;
	// another pick then usually succeeds.
	for attempt := 0; ; attempt++ {
		var ln *net.TCPListener
		var bound, fd int
		err := netns.DoAt(nsPath, func() error {
			lc := net.ListenConfig{Control: controlOptions(o)}
			l, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(ip.String(), strconv.Itoa(port)))
			if err != nil {
				return fmt.Errorf("listen on %s: %w", net.JoinHostPort(addr, fmt.Sprint(port)), err)
			}
			ln = l.(*net.TCPListener)
			bound = ln.Addr().(*net.TCPAddr).Port
			fd, err = bindUDP(ip, bound, o)
			return err
		})
		if err != nil && ln == nil {
			return 0, err
		}
		if err != nil {
			ln.Close()
			if port == 0 && attempt < 20 && errors.Is(err, unix.EADDRINUSE) {
				continue
			}
			return 0, fmt.Errorf("listen on %s: %w", addr, err)
		}
		if err := e.serveListener(ln, fd, o); err != nil {
			return 0, err
		}
		return bound, nil
	}
}

// serveListener starts a listener's accepting threads and its UDP socket's loop;
// it owns the listener and udpFD from here on, and closes them if it
// fails.
func (e *engine) serveListener(ln *net.TCPListener, udpFD int, o SocketOptions) error {
	lfd, err := detach(ln)
	if err != nil {
		unix.Close(udpFD)
		return err
	}
	// Accepted sockets inherit these, so a tcp_crr connection needs
	// no call of its own to set them; other flows set their own.
	err = setNoDelay(lfd, !o.Nagle)
	if err == nil {
		err = setSendTimeout(lfd, serverSocketTimeout)
	}
	if err != nil {
		unix.Close(lfd)
		unix.Close(udpFD)
		return err
	}
	tcp, err := e.sockets.adoptListening(lfd)
	if err != nil {
		unix.Close(udpFD)
		return err
	}
	udp, err := e.sockets.adoptListening(udpFD)
	if err != nil {
		tcp.close()
		return err
	}
	acceptors := usableCPUs()
	e.mu.Lock()
	if e.stopping {
		e.mu.Unlock()
		tcp.close()
		udp.close()
		return errStopped
	}
	e.work.Add(acceptors + 2)
	e.mu.Unlock()
	var accepting sync.WaitGroup
	accepting.Add(acceptors)
	for range acceptors {
		go e.acceptLoop(tcp, o, &accepting)
	}
	go func() {
		defer e.work.Done()
		accepting.Wait()
		tcp.close()
	}()
	go e.serveUDP(udp)
	return nil
}

// acceptLoop is one of a listener's accepting threads, one per usable
// CPU, each blocked in accept(2) on the listening socket until the kernel
// hands it a connection. It reads the header, answers a tcp_crr
// transaction itself and gives any other flow, and a connection whose
// header is slow to come, a goroutine of its own.
// It yields now and then, as a flow does (see yieldInterval). Stopping the
// engine shuts the listening socket down, which wakes every accepting
// thread.
func (e *engine) acceptLoop(ln *dataSocket, o SocketOptions, accepting *sync.WaitGroup) {
	defer e.work.Done()
	defer accepting.Done()
	defer holdP()()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	request := make([]byte, transferBufferSize)
	y := newYielder(1)
	for {
		y.maybeYield(monotonicNow())
		fd, err := accept(ln.fd)
		if err != nil {
			if e.sockets.isStopped() || e.ctx.Err() != nil {
				return
			}
			if err == unix.ECONNABORTED {
				continue
			}
			// Out of descriptors or similar: back off instead of spinning.
			time.Sleep(50 * time.Millisecond)
			continue
		}
		sock, err := e.sockets.adopt(fd)
		if err != nil {
			continue // adopt closed it
		}
		var raw [headerSize]byte
		got, err := recvHeader(sock.fd, raw[:], 0, headerPatience)
		if err == errSocketTimeout {
			e.work.Add(1)
			go e.awaitHeader(sock, raw, got, o)
			continue
		}
		if h, ok := answer(sock, raw[:], err, request); ok {
			e.work.Add(1)
			go func() {
				defer e.work.Done()
				e.serveConn(sock, h, o)
			}()
		}
	}
}

// headerPatience is how long an accepting thread waits for a
// connection's header before it leaves the wait to a goroutine: every
// client writes its header as soon as it is connected, and a peer that
// stays silent must not hold up the connections queued behind it.
const headerPatience = 50 * time.Millisecond

// awaitHeader waits out a slow connection's header, for up to
// headerTimeout, and serves the connection on this goroutine.
func (e *engine) awaitHeader(sock *dataSocket, raw [headerSize]byte, got int, o SocketOptions) {
	defer e.work.Done()
	_, err := recvHeader(sock.fd, raw[:], got, headerTimeout)
	if h, ok := answer(sock, raw[:], err, make([]byte, 64<<10)); ok {
		e.serveConn(sock, h, o)
	}
}

// recvHeader reads into raw, of which got bytes have arrived, until it is
// full, each read waiting up to timeout. It returns the bytes it holds.
func recvHeader(fd int, raw []byte, got int, timeout time.Duration) (int, error) {
	if err := setRecvTimeout(fd, timeout); err != nil {
		return got, err
	}
	for got < len(raw) {
		n, err := recv(fd, raw[got:])
		if err != nil {
			return got, err
		}
		if n == 0 {
			return got, io.ErrUnexpectedEOF
		}
		got += n
	}
	return got, nil
}

// answer takes a connection whose header was read with err: it closes one
// without a valid header, which carries no results, and answers a tcp_crr
// transaction, reading its request into scrap; a tcp_crr connection is
// one transaction of a flow, and the client's account of the flow is the
// only one. It returns the header of any other flow, for the caller to
// serve.
func answer(sock *dataSocket, raw []byte, err error, scrap []byte) (connHeader, bool) {
	var h connHeader
	if err == nil {
		h, err = parseConnHeader(raw)
	}
	if err == nil && h.kind != kindCRR {
		return h, true
	}
	if err == nil {
		serveCRR(sock.fd, h, scrap)
	}
	sock.close()
	return connHeader{}, false
}

// accept waits for the next connection on a blocking listening socket.
// The address is not asked for: the header names the flow.
func accept(ln int) (int, error) {
	for {
		fd, _, errno := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(ln), 0, 0, unix.SOCK_CLOEXEC, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(fd), nil
	}
}

// serveConn serves a flow's connection, its header read, on this
// goroutine. Connections that fail before joining a session are dropped
// silently: they carry no results.
func (e *engine) serveConn(sock *dataSocket, h connHeader, o SocketOptions) {
	s, err := e.sessions.join(h)
	if err != nil {
		sock.close()
		return
	}
	meter := &flowMeter{index: h.flowIndex}
	var udp *udpFlow
	if isUDPKind(h.kind) {
		udp = s.udpFlow(h.flowIndex)
		meter = &udp.meter
	}
	if udp != nil {
		err = serveUDPControl(sock.fd, udp)
	} else {
		err = e.serveFlow(sock.fd, h, meter, s, o)
	}
	// Leave the session before closing the socket: the client waits for
	// our close, so the session is complete by the time its run returns.
	e.sessions.leave(s, meter, err)
	sock.close()
}

// serveFlow runs the listener side of one flow on the calling goroutine's
// own thread, or, for a stream of more flows than CPUs, on the receive
// pool's, as the sender groups such flows (see receivePool).
func (e *engine) serveFlow(fd int, h connHeader, m *flowMeter, s *session, o SocketOptions) error {
	if err := configureSocket(fd, h.kind == kindRR && !o.Nagle, serverSocketTimeout); err != nil {
		return err
	}
	if cpus := usableCPUs(); h.kind != kindRR && int(h.flowCount) > cpus {
		return e.receivers.receive(fd, int(h.flowCount), cpus, m, s)
	}
	defer holdP()()
	if h.kind != kindRR {
		return receiveStream(fd, int(h.flowCount), m, s) // unlocked: see streamSlice
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return serveRR(fd, h, m, s)
}
