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
		udp, err := e.sockets.adoptListening(fd)
		if err != nil {
			ln.Close()
			return 0, err
		}
		e.mu.Lock()
		if e.stopping {
			e.mu.Unlock()
			ln.Close()
			udp.close()
			return 0, errStopped
		}
		e.listeners = append(e.listeners, ln)
		e.work.Add(2)
		e.mu.Unlock()
		go e.acceptLoop(ln, o)
		go e.serveUDP(udp)
		return bound, nil
	}
}

func (e *engine) acceptLoop(ln *net.TCPListener, o SocketOptions) {
	defer e.work.Done()
	for {
		conn, err := ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || e.ctx.Err() != nil {
				return
			}
			// Out of descriptors or similar: back off instead of spinning.
			time.Sleep(50 * time.Millisecond)
			continue
		}
		e.work.Add(1)
		go e.serveConn(conn, o)
	}
}

// serveConn reads a data connection's header, then serves the flow on this
// goroutine's own thread with blocking system calls. Connections that fail
// before joining a session are dropped silently: they carry no results.
func (e *engine) serveConn(conn *net.TCPConn, o SocketOptions) {
	defer e.work.Done()
	// Stopping must not wait for a silent peer's header timeout.
	stopWaiting := context.AfterFunc(e.ctx, func() { conn.SetReadDeadline(time.Now()) })
	conn.SetReadDeadline(time.Now().Add(headerTimeout))
	raw := make([]byte, headerSize)
	_, err := io.ReadFull(conn, raw)
	stopWaiting()
	if err != nil {
		conn.Close()
		return
	}
	h, err := parseConnHeader(raw)
	if err != nil {
		conn.Close()
		return
	}
	if h.kind == kindCRR {
		// A tcp_crr connection is one transaction of a flow, and the
		// client's account of the flow is the only one.
		serveCRR(conn, h, o)
		return
	}
	s, err := e.sessions.join(h)
	if err != nil {
		conn.Close()
		return
	}
	meter := &flowMeter{index: h.flowIndex}
	var udp *udpFlow
	if isUDPKind(h.kind) {
		udp = s.udpFlow(h.flowIndex)
		meter = &udp.meter
	}
	sock, err := e.adopt(conn)
	switch {
	case err != nil && udp != nil:
		udp.finish(0)
	case err != nil:
	case udp != nil:
		err = serveUDPControl(sock.fd, udp)
	default:
		err = e.serveFlow(sock.fd, h, meter, s, o)
	}
	// Leave the session before closing the socket: the client waits for
	// our close, so the session is complete by the time its run returns.
	e.sessions.leave(s, meter, err)
	if sock != nil {
		sock.close()
	}
}

// adopt moves a connection onto a blocking descriptor the engine tracks.
func (e *engine) adopt(conn *net.TCPConn) (*dataSocket, error) {
	fd, err := detach(conn)
	if err != nil {
		return nil, err
	}
	return e.sockets.adopt(fd)
}

// serveFlow runs the listener side of one flow on the calling goroutine's
// own thread, or, for a stream of more flows than CPUs, on the receive
// pool's, as the sender groups such flows (see receivePool).
func (e *engine) serveFlow(fd int, h connHeader, m *flowMeter, s *session, o SocketOptions) error {
	if err := configureSocket(fd, h.kind == kindRR && !o.Nagle, serverSocketTimeout); err != nil {
		return err
	}
	if h.kind != kindRR && int(h.flowCount) > usableCPUs() {
		return e.receivers.receive(fd, m, s)
	}
	defer holdP()()
	if h.kind != kindRR {
		return receiveStream(fd, int(h.flowCount), m, s) // unlocked: see streamSlice
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return serveRR(fd, h, m, s)
}
