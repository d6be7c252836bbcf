package engine

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// loopbackPair connects two TCP sockets over loopback and returns their
// blocking descriptors, set up as a flow's are (configureSocket): the
// accepted one to read, the dialled one to write.
func loopbackPair(t *testing.T) (reader, writer int) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialled, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	accepted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if writer, err = detach(dialled.(*net.TCPConn)); err != nil {
		t.Fatal(err)
	}
	if reader, err = detach(accepted.(*net.TCPConn)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(reader); unix.Close(writer) })
	if err := configureSocket(writer, false, clientSocketTimeout); err != nil {
		t.Fatal(err)
	}
	if err := configureSocket(reader, false, serverSocketTimeout); err != nil {
		t.Fatal(err)
	}
	return reader, writer
}

func sendTimeout(t *testing.T, fd int) time.Duration {
	t.Helper()
	tv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(tv.Nano())
}

// TestStreamStopsAtItsDeadlineWhileThePathStalls sends to a peer that
// reads nothing: the socket fills at once, and the sender must still stop
// at its deadline, not at the end of a blocked send (the flow's 30 s).
func TestStreamStopsAtItsDeadlineWhileThePathStalls(t *testing.T) {
	_, writer := loopbackPair(t)
	const length = 300 * time.Millisecond
	type result struct {
		sent, stoppedAt int64
		err             error
	}
	done := make(chan result, 1)
	began := monotonicNow()
	deadline := began + int64(length)
	go func() {
		sent, stoppedAt, err := sendStream(writer, make([]byte, 128<<10), 1, deadline)
		done <- result{sent, stoppedAt, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(length + 5*time.Second):
		t.Fatal("the sender was still in a blocked send 5 s after its deadline")
	}
	if r.err != nil {
		t.Fatalf("a stalled path failed the stream: %v", r.err)
	}
	if r.sent <= 0 {
		t.Errorf("sent %d bytes; the socket buffers alone take more", r.sent)
	}
	if late := time.Duration(r.stoppedAt - deadline); late < 0 || late > 10*streamSlice {
		t.Errorf("stopped %v after the deadline; a blocked call lasts at most %v", late, streamSlice)
	}
	if got := sendTimeout(t, writer); got != clientSocketTimeout {
		t.Errorf("after the stream the socket's send timeout is %v, want the flow's %v back", got, clientSocketTimeout)
	}
}

// TestStreamReceiverWaitsOutAPause pauses the sender for many times the
// receiver's slice between two halves of a stream: the receiver counts
// both halves and ends cleanly at the close.
func TestStreamReceiverWaitsOutAPause(t *testing.T) {
	reader, writer := loopbackPair(t)
	s := &session{}
	var m flowMeter
	done := make(chan error, 1)
	go func() { done <- receiveStream(reader, 1, &m, s) }()
	const half = 1 << 20
	chunk := make([]byte, 64<<10)
	if err := sendN(writer, chunk, half); err != nil {
		t.Fatal(err)
	}
	time.Sleep(25 * streamSlice)
	if err := sendN(writer, chunk, half); err != nil {
		t.Fatal(err)
	}
	unix.Shutdown(writer, unix.SHUT_WR)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the receiver failed over a %v pause: %v", 25*streamSlice, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver was still reading 10 s after its peer closed")
	}
	if m.bytes != 2*half {
		t.Errorf("received %d bytes, want %d", m.bytes, 2*half)
	}
}
