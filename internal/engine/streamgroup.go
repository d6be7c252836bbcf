package engine

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// A stream's flows share the threads the engine may run on: with more
// flows than CPUs, each thread drives a group of flows through epoll, as
// iperf3 3.12 drives all of its flows from one thread. One blocking
// thread per flow, four flows pinned to one core, sent 17-21 Gbit/s on a
// veth pair where iperf3's single thread sent 27-34: the threads left the
// core idle while all four waited for space at once, and paid a switch
// for every wake-up.
//
// With more than one CPU to run on, a stream of a few flows per CPU is
// steady instead: each flow has a thread of its own on each side, as
// iperf3 3.16 and later have, and the thread keeps its CPU. On loopback
// the receiver copies out of the pages the sender has just filled; with a
// flow's two ends on one CPU that copy stays in its cache, and across
// CPUs four flows moved 0.56-0.70 of what they moved on one. The kernel
// pairs the ends of a flow when its threads stay where they run, as
// iperf3's do; a Go thread that yields wakes another, often on the other
// CPU, which may take its goroutine over. So a steady stream's goroutine
// stays locked to its thread, makes its calls with unix.RawSyscall6, which
// the runtime's monitor does not see as system calls and so never takes
// the thread's P away, and never yields; the runtime still preempts it
// every 10 ms, on the same thread, and every call is bounded by
// streamSlice, so a collection waits no longer than that for it. Four
// unpinned flows over loopback moved 0.84-1.00 of iperf3 3.20's bytes
// (median 0.92) where grouped they moved 0.76-0.85 (median 0.78), and
// over veth, bridge and macvlan 0.91-0.99 where grouped 0.81-0.92.
// docs/performance.md has the measurements.

// steadyFlowsPerCPU bounds the flows of a steady stream: beyond it,
// threads would outnumber the CPUs too far to keep theirs.
const steadyFlowsPerCPU = 4

// steadyStream reports whether a stream of flows, on an engine that may
// run on cpus CPUs, gives each flow a thread that keeps its CPU. One flow
// and a single CPU (a pinned engine) keep the paths measured before.
func steadyStream(flows, cpus int) bool {
	return flows > 1 && cpus > 1 && flows <= steadyFlowsPerCPU*cpus
}

// streamThreads is how many threads send, or receive, a stream of flows
// on cpus CPUs.
func streamThreads(flows, cpus int) int {
	if steadyStream(flows, cpus) {
		return flows
	}
	return max(1, min(flows, cpus))
}

// usableCPUs is how many CPUs this process may run on.
func usableCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() == 0 {
		return 1
	}
	return set.Count()
}

// streamGroups splits n flows over at most threads threads, as evenly as
// they go: the flow indexes of each thread.
func streamGroups(n, threads int) [][]int {
	threads = max(1, min(n, threads))
	groups := make([][]int, threads)
	for i := range n {
		groups[i%threads] = append(groups[i%threads], i)
	}
	return groups
}

// sendStreams writes buf on every socket of a group, whichever can take
// it, until the monotonic deadline; it returns each socket's bytes and
// when it stopped. The sockets are non-blocking while it runs and
// blocking again when it returns.
func sendStreams(fds []int, buf []byte, flows int, deadline int64) (sent []int64, stoppedAt int64, err error) {
	sent = make([]int64, len(fds))
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return sent, monotonicNow(), fmt.Errorf("epoll: %w", err)
	}
	defer unix.Close(ep)
	for i, fd := range fds {
		if err := unix.SetNonblock(fd, true); err != nil {
			return sent, monotonicNow(), err
		}
		defer unix.SetNonblock(fd, false)
		ev := unix.EpollEvent{Events: unix.EPOLLOUT | unix.EPOLLET, Fd: int32(i)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return sent, monotonicNow(), fmt.Errorf("epoll add: %w", err)
		}
	}
	writable := make([]bool, len(fds))
	for i := range writable {
		writable[i] = true
	}
	events := make([]unix.EpollEvent, len(fds))
	y := newYielder(flows)
	stalledSince := monotonicNow()
	for {
		now := monotonicNow()
		if now >= deadline {
			return sent, now, nil
		}
		y.maybeYield(now)
		progressed, err := sendWhereWritable(fds, buf, writable, sent)
		if err != nil {
			return sent, monotonicNow(), err
		}
		if progressed {
			stalledSince = now
			continue
		}
		if time.Duration(now-stalledSince) > clientSocketTimeout {
			return sent, now, errSocketTimeout
		}
		wait := max(1, min(int((deadline-now)/int64(time.Millisecond)), int(yieldInterval/time.Millisecond)))
		n, err := unix.EpollWait(ep, events, wait)
		if err != nil && err != unix.EINTR {
			return sent, monotonicNow(), fmt.Errorf("epoll wait: %w", err)
		}
		for _, ev := range events[:max(0, n)] {
			writable[ev.Fd] = true
		}
	}
}

// sendWhereWritable writes once on each socket marked writable, marking
// those that are full, and reports whether any took bytes.
func sendWhereWritable(fds []int, buf []byte, writable []bool, sent []int64) (bool, error) {
	progressed := false
	for i, fd := range fds {
		if !writable[i] {
			continue
		}
		n, err := send(fd, buf)
		switch {
		case err == errSocketTimeout: // EAGAIN: full until epoll says otherwise
			writable[i] = false
		case err != nil:
			return progressed, err
		default:
			sent[i] += int64(n)
			progressed = progressed || n > 0
		}
	}
	return progressed, nil
}
