package engine

import (
	"fmt"
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
