package engine

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"cnbench/internal/workload"
)

// maxLiveSockets bounds the data sockets of one engine; scenarios are
// checked against the same bound before anything is built.
const maxLiveSockets = workload.MaxEngineSockets

var errStopped = errors.New("engine is stopping")

// socketSet tracks the engine's live data sockets so that stopping can
// unblock every flow at once: shutdown(2) wakes a thread blocked in read or
// write on the socket, where close(2) from another thread would not.
type socketSet struct {
	mu   sync.Mutex
	live map[*dataSocket]struct{}
	// listening counts the listeners' own sockets in live, which the
	// flows' bound leaves out.
	listening int
	stopped   bool
}

// dataSocket is a blocking socket owned by one flow, or a listener's.
type dataSocket struct {
	fd        int
	set       *socketSet
	listening bool
}

func newSocketSet() *socketSet {
	return &socketSet{live: make(map[*dataSocket]struct{})}
}

// adopt takes ownership of a flow's fd; on error the fd is closed.
func (s *socketSet) adopt(fd int) (*dataSocket, error) {
	return s.adoptAs(fd, false)
}

// adoptListening takes ownership of a listener's socket, which does not
// count against the flows' bound: an engine serves maxLiveSockets flows
// whatever it listens on.
func (s *socketSet) adoptListening(fd int) (*dataSocket, error) {
	return s.adoptAs(fd, true)
}

func (s *socketSet) adoptAs(fd int, listening bool) (*dataSocket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopped:
		unix.Close(fd)
		return nil, errStopped
	case !listening && len(s.live)-s.listening >= maxLiveSockets:
		unix.Close(fd)
		return nil, fmt.Errorf("engine already has %d live data sockets", maxLiveSockets)
	}
	sock := &dataSocket{fd: fd, set: s, listening: listening}
	s.live[sock] = struct{}{}
	if listening {
		s.listening++
	}
	return sock, nil
}

// holder is a tracked socket with no descriptor yet, for a flow that
// opens and closes a connection per transaction (tcp_crr).
func (s *socketSet) holder() (*dataSocket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopped:
		return nil, errStopped
	case len(s.live)-s.listening >= maxLiveSockets:
		return nil, fmt.Errorf("engine already has %d live data sockets", maxLiveSockets)
	}
	sock := &dataSocket{fd: -1, set: s}
	s.live[sock] = struct{}{}
	return sock, nil
}

// hold gives a holder its next descriptor; the engine stopping closes fd
// and fails.
func (d *dataSocket) hold(fd int) error {
	d.set.mu.Lock()
	defer d.set.mu.Unlock()
	if d.set.stopped {
		unix.Close(fd)
		return errStopped
	}
	d.fd = fd
	return nil
}

// release closes a holder's descriptor, keeping the holder.
func (d *dataSocket) release() {
	d.set.mu.Lock()
	defer d.set.mu.Unlock()
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}

// close releases the socket. It holds the set's lock so that stop never
// shuts down a descriptor number that has been closed and reused.
func (d *dataSocket) close() {
	d.set.mu.Lock()
	defer d.set.mu.Unlock()
	if _, ok := d.set.live[d]; !ok {
		return
	}
	delete(d.set.live, d)
	if d.listening {
		d.set.listening--
	}
	if d.fd >= 0 {
		unix.Close(d.fd)
	}
}

// stop refuses new sockets and aborts the I/O of all live ones; their
// owners still close them.
func (s *socketSet) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for sock := range s.live {
		if sock.fd >= 0 {
			unix.Shutdown(sock.fd, unix.SHUT_RDWR)
		}
	}
}

func (s *socketSet) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}
