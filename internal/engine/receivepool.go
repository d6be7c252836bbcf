package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A listener's stream of more flows than CPUs is read by threads that
// each drive their flows through epoll, as iperf3's receiver reads all of
// its flows from one thread. With a blocking thread per flow, four flows
// on two cores read 0.86 to 0.90 times what iperf3 read on the same
// bridge, the receivers at 89% of a core against iperf3's 68%, while at
// two flows, a thread per CPU, the engine read 1.12 times iperf3: the
// threads woke one by one for data that one thread takes in a single
// pass. Up to one flow per CPU, a blocking thread per flow saves the
// epoll_wait between reads.
//
// A stream's flows are read by one thread per flowsPerReceiveThread of
// them, up to one per usable CPU, spread evenly (see threadShare). On a
// machine that also sends the stream, a second reader for four flows is
// one more thread beside the sending groups (one per CPU): with one, four
// unpinned flows on two CPUs cost 0.81 to 1.03 (median 0.95) of iperf3
// 3.12's CPU per byte, against 0.74 to 1.09 (median 1.01) with a thread
// per CPU, in twelve paired runs on veth, bridge and macvlan. A single
// reader for hundreds of flows fell behind their 32 to 128 sending
// threads: 256 flows on one engine read a median of 4.3 Gbit/s against
// 7.1 with two, 1024 flows 12.4 and 12.9 against 14.6 and 15.0
// (docs/performance.md).
const flowsPerReceiveThread = 16

// receivePool is an engine's receiving threads, started as flows need them.
type receivePool struct {
	mu      sync.Mutex
	threads []*receiveThread
	stopped bool
	exited  sync.WaitGroup
}

// receiveThread reads the flows registered in its epoll set until each
// one's peer closes. Without flows it sleeps in epoll_wait until wake
// says that a flow came or that the pool stops: an engine outlives its
// streams, and a thread waking every few milliseconds for nothing would
// run beside whatever the machine measures next, iperf3's turns in a
// paired comparison among them.
type receiveThread struct {
	ep, wake int
	stopping atomic.Bool
	mu       sync.Mutex
	flows    map[int32]*pooledFlow
	closed   bool // the thread has ended; it takes no more flows
}

// pooledFlow is one flow a receive thread reads.
type pooledFlow struct {
	fd    int
	meter *flowMeter
	s     *session
	// last is when the flow last received, or was registered; a flow
	// silent for serverSocketTimeout fails as a blocking read would.
	last int64
	done chan error
}

// receive reads a flow of a stream of streamFlows flows on one of the
// pool's threads (see place), the engine using cpus CPUs, until its peer
// closes, and returns how it ended.
func (p *receivePool) receive(fd, streamFlows, cpus int, m *flowMeter, s *session) error {
	if err := unix.SetNonblock(fd, true); err != nil {
		return fmt.Errorf("receive: set non-blocking: %w", err)
	}
	defer unix.SetNonblock(fd, false)
	f := &pooledFlow{fd: fd, meter: m, s: s, last: monotonicNow(), done: make(chan error, 1)}
	if err := p.place(f, threadShare(streamFlows, cpus), cpus); err != nil {
		return err
	}
	return <-f.done
}

// register adds a flow to the thread's epoll set, unless the thread has
// ended.
func (t *receiveThread) register(f *pooledFlow) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errStopped
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(f.fd)}
	if err := unix.EpollCtl(t.ep, unix.EPOLL_CTL_ADD, f.fd, &ev); err != nil {
		return fmt.Errorf("receive: epoll add: %w", err)
	}
	t.flows[int32(f.fd)] = f
	t.kick()
	return nil
}

// kick wakes the thread from epoll_wait.
func (t *receiveThread) kick() {
	unix.Write(t.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
}

// threadShare is how many of a stream's flows one thread takes before
// the pool starts another: a stream of up to flowsPerReceiveThread flows
// shares one thread (with other such streams, up to that many flows); a
// bigger one is spread evenly over as many threads as that takes, at
// most one per CPU, so that 20 flows on two CPUs are read ten and ten,
// not sixteen and four.
func threadShare(streamFlows, cpus int) int {
	threads := min(cpus, max(1, (streamFlows+flowsPerReceiveThread-1)/flowsPerReceiveThread))
	if threads == 1 {
		return flowsPerReceiveThread
	}
	return (streamFlows + threads - 1) / threads
}

// place registers a flow with the thread that has the fewest, starting
// a thread first when that one already has share flows and there are
// fewer threads than cpus. Choosing and registering under one lock lets
// flows that arrive together count each other.
func (p *receivePool) place(f *pooledFlow, share, cpus int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return errStopped
	}
	var least *receiveThread
	leastFlows := 0
	for _, t := range p.threads {
		t.mu.Lock()
		n := len(t.flows)
		t.mu.Unlock()
		if least == nil || n < leastFlows {
			least, leastFlows = t, n
		}
	}
	if least == nil || (leastFlows >= share && len(p.threads) < cpus) {
		t, err := newReceiveThread()
		if err != nil {
			return err
		}
		p.threads = append(p.threads, t)
		p.exited.Add(1)
		go func() {
			defer p.exited.Done()
			t.run()
		}()
		least = t
	}
	return least.register(f)
}

// stop ends the threads; flows still registered fail with errStopped.
func (p *receivePool) stop() {
	p.mu.Lock()
	p.stopped = true
	threads := p.threads
	p.mu.Unlock()
	for _, t := range threads {
		t.stopping.Store(true)
		t.kick()
	}
	p.exited.Wait()
}

func newReceiveThread() (*receiveThread, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("receive: epoll: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(ep)
		return nil, fmt.Errorf("receive: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wake)}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		unix.Close(ep)
		unix.Close(wake)
		return nil, fmt.Errorf("receive: epoll add: %w", err)
	}
	return &receiveThread{ep: ep, wake: wake, flows: map[int32]*pooledFlow{}}, nil
}

// run reads whichever flows have data, one buffer each per pass, so that
// no flow waits behind another's backlog.
func (t *receiveThread) run() {
	defer holdP()() // on no locked thread: see streamSlice
	defer unix.Close(t.ep)
	defer unix.Close(t.wake)
	buf := make([]byte, receiveBufferSize)
	events := make([]unix.EpollEvent, 64)
	y := newYielder(1)
	lastScan := monotonicNow()
	counter := make([]byte, 8)
	for {
		n, err := unix.EpollWait(t.ep, events, t.waitMillis())
		if err != nil && err != unix.EINTR {
			t.end(fmt.Errorf("receive: epoll wait: %w", err))
			return
		}
		now := monotonicNow()
		for _, ev := range events[:max(0, n)] {
			if int(ev.Fd) == t.wake {
				if t.stopping.Load() {
					t.end(errStopped)
					return
				}
				unix.Read(t.wake, counter)
				continue
			}
			t.mu.Lock()
			f := t.flows[ev.Fd]
			t.mu.Unlock()
			if f == nil {
				continue
			}
			r, err := recv(f.fd, buf)
			switch {
			case err == errSocketTimeout: // EAGAIN: a wake-up with nothing to read
			case err != nil:
				t.finish(f, err)
			case r == 0:
				t.finish(f, nil)
			default:
				f.meter.add(r, now, f.s)
				f.last = now
				now = monotonicNow()
			}
		}
		y.maybeYield(now)
		if time.Duration(now-lastScan) >= time.Second {
			lastScan = now
			t.failSilent(now)
		}
	}
}

// waitMillis is how long epoll_wait may sleep: until the next yield while
// the thread has flows, for good when it has none.
func (t *receiveThread) waitMillis() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.flows) == 0 {
		return -1
	}
	return int(yieldInterval / time.Millisecond)
}

// finish takes a flow out of the thread and tells its waiter how it ended.
func (t *receiveThread) finish(f *pooledFlow, err error) {
	unix.EpollCtl(t.ep, unix.EPOLL_CTL_DEL, f.fd, nil)
	t.mu.Lock()
	delete(t.flows, int32(f.fd))
	t.mu.Unlock()
	f.done <- err
}

// failSilent fails the flows that have received nothing for longer than a
// blocking read would have waited.
func (t *receiveThread) failSilent(now int64) {
	var silent []*pooledFlow
	t.mu.Lock()
	for _, f := range t.flows {
		if time.Duration(now-f.last) > serverSocketTimeout {
			silent = append(silent, f)
		}
	}
	t.mu.Unlock()
	for _, f := range silent {
		t.finish(f, errSocketTimeout)
	}
}

// end closes the thread to new flows and fails those it still has.
func (t *receiveThread) end(err error) {
	t.mu.Lock()
	t.closed = true
	flows := make([]*pooledFlow, 0, len(t.flows))
	for _, f := range t.flows {
		flows = append(flows, f)
	}
	t.mu.Unlock()
	for _, f := range flows {
		t.finish(f, err)
	}
}
