package engine

import (
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// A stream's flows share the threads the engine may run on: with more
// flows than CPUs, each thread drives a group of flows through epoll, as
// iperf3 drives all of its flows from one thread. One blocking thread per
// flow, four flows pinned to one core, sent 17-21 Gbit/s on a veth pair
// where iperf3's single thread sent 27-34: the threads left the core idle
// while all four waited for space at once, and paid a switch for every
// wake-up.

// usableCPUs is how many CPUs this process may run on.
func usableCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() == 0 {
		return 1
	}
	return set.Count()
}

// drainBeforeWriting says whether a group's sockets take more only once
// all they were given has left (TCP_NOTSENT_LOWAT of one byte). Under a
// pacing congestion control (BBR, this machine's default) a socket that
// holds unsent data sends each segment when its pacing timer fires: a
// group that kept its sockets full held about 540 KB unsent in each, the
// machine took 1.8 times the timer expirations per byte, and much of
// their softirq work ran in the receiving threads' account. Four unpinned
// flows on two CPUs read 0.88-1.03 of iperf3 3.12's throughput for
// 1.08-1.30 of its CPU per byte; written only when drained, 1.01-1.26 and
// 0.94-1.20 (median 1.04 over twelve alternated runs), the engine at
// 27-28 Gbit/s instead of 21-25 (docs/performance.md). On one CPU, an
// engine pinned to its core, the same mark cost four flows a third of
// their throughput (0.62-0.73 of iperf3), so there the sockets stay full.
func drainBeforeWriting() bool {
	return usableCPUs() > 1
}

// streamGroups splits n flows over at most cpus threads, as evenly as
// they go: the flow indexes of each thread.
func streamGroups(n, cpus int) [][]int {
	threads := max(1, min(n, cpus))
	groups := make([][]int, threads)
	for i := range n {
		groups[i%threads] = append(groups[i%threads], i)
	}
	return groups
}

// sendStreams writes buf on every socket of a group, whichever can take
// it, until the monotonic deadline; it returns each socket's bytes and
// when it stopped. The sockets are non-blocking while it runs and
// blocking again when it returns. With drained, a socket takes more only
// once all it was given has left (see drainBeforeWriting).
func sendStreams(fds []int, buf []byte, flows int, deadline int64, drained bool) (sent []int64, stoppedAt int64, err error) {
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
		if drained {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, 1); err != nil {
				return sent, monotonicNow(), fmt.Errorf("unsent low-water mark: %w", err)
			}
		}
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
		// A socket found full is written again once epoll says it has
		// room. While others still take bytes, ask without waiting:
		// otherwise it waits until every other socket is full too.
		wait := 0
		switch {
		case progressed && !slices.Contains(writable, false):
			stalledSince = now
			continue
		case progressed:
			stalledSince = now
		case time.Duration(now-stalledSince) > clientSocketTimeout:
			return sent, now, errSocketTimeout
		default:
			wait = max(1, min(int((deadline-now)/int64(time.Millisecond)), int(yieldInterval/time.Millisecond)))
		}
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
