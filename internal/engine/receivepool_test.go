package engine

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// socketPairs returns n connected stream socket pairs: the first of each
// to read, the second to write; all are closed when the test ends.
func socketPairs(t *testing.T, n int) (readers, writers []int) {
	t.Helper()
	for range n {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		readers, writers = append(readers, fds[0]), append(writers, fds[1])
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	}
	return readers, writers
}

// TestReceivePoolCountsEveryFlow reads 48 flows, each sending a different
// number of bytes, on the pool's threads, no more of them than CPUs.
func TestReceivePoolCountsEveryFlow(t *testing.T) {
	const flows = 48
	r := newPoolRun(t, flows)
	for i := range flows {
		r.read(i, flows)
	}
	chunk := make([]byte, 100_000)
	for i, fd := range r.writers {
		for range i + 1 {
			if err := sendN(fd, chunk, len(chunk)); err != nil {
				t.Fatal(err)
			}
		}
		unix.Shutdown(fd, unix.SHUT_WR)
	}
	for range flows {
		select {
		case err := <-r.errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a flow was still being read 10 s after its peer closed")
		}
	}
	for i, m := range r.meters {
		if want := int64((i + 1) * len(chunk)); m.bytes != want {
			t.Errorf("flow %d: %d bytes, want %d", i, m.bytes, want)
		}
	}
	if n, cpus := len(r.p.threads), usableCPUs(); n < 1 || n > cpus {
		t.Errorf("%d receiving threads for %d flows on %d CPUs", n, flows, cpus)
	}
}

// poolRun is a pool reading flows of socket pairs, torn down when the
// test ends.
type poolRun struct {
	p                receivePool
	readers, writers []int
	meters           []flowMeter
	errs             chan error
	s                session
}

func newPoolRun(t *testing.T, flows int) *poolRun {
	r := &poolRun{meters: make([]flowMeter, flows), errs: make(chan error, flows)}
	r.readers, r.writers = socketPairs(t, flows)
	t.Cleanup(r.p.stop)
	return r
}

// read starts reading flow i as one of a stream of streamFlows flows.
func (r *poolRun) read(i, streamFlows int) {
	go func() { r.errs <- r.p.receive(r.readers[i], streamFlows, usableCPUs(), &r.meters[i], &r.s) }()
}

// finish closes every flow's sending side and waits for its reader.
func (r *poolRun) finish(t *testing.T) {
	t.Helper()
	for _, fd := range r.writers {
		unix.Shutdown(fd, unix.SHUT_WR)
	}
	for range r.readers {
		if err := <-r.errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestReceivePoolFillsAThreadBeforeStartingAnother keeps flows open while
// they arrive: small streams' first flowsPerReceiveThread flows share one
// thread, and the next starts a second where the engine may use two CPUs.
func TestReceivePoolFillsAThreadBeforeStartingAnother(t *testing.T) {
	r := newPoolRun(t, flowsPerReceiveThread+1)
	for i := range flowsPerReceiveThread {
		r.read(i, flowsPerReceiveThread)
	}
	waitForPooledFlows(t, &r.p, flowsPerReceiveThread)
	if n := len(flowsPerThread(&r.p)); n != 1 {
		t.Errorf("%d flows on %d threads, want one", flowsPerReceiveThread, n)
	}
	r.read(flowsPerReceiveThread, flowsPerReceiveThread)
	waitForPooledFlows(t, &r.p, flowsPerReceiveThread+1)
	want := min(2, usableCPUs())
	if n := len(flowsPerThread(&r.p)); n != want {
		t.Errorf("%d flows on %d threads with %d usable CPUs, want %d", flowsPerReceiveThread+1, n, usableCPUs(), want)
	}
	r.finish(t)
}

// TestReceivePoolSpreadsABigStreamEvenly reads one stream of 20 flows:
// two threads of ten where the engine may use two CPUs, not sixteen and
// four.
func TestReceivePoolSpreadsABigStreamEvenly(t *testing.T) {
	const flows = 20
	r := newPoolRun(t, flows)
	for i := range flows {
		r.read(i, flows)
	}
	waitForPooledFlows(t, &r.p, flows)
	want := []int{flows}
	if usableCPUs() >= 2 {
		want = []int{flows / 2, flows / 2}
	}
	if got := flowsPerThread(&r.p); !slices.Equal(got, want) {
		t.Errorf("a stream of %d flows read as %v flows per thread, want %v", flows, got, want)
	}
	r.finish(t)
}

// TestThreadShare pins the split: small streams share a thread up to
// flowsPerReceiveThread flows; bigger ones are spread evenly over the CPUs
// they need.
func TestThreadShare(t *testing.T) {
	for _, c := range []struct{ flows, cpus, want int }{
		{4, 2, 16}, {16, 2, 16}, {17, 2, 9}, {20, 2, 10}, {32, 2, 16},
		{1024, 2, 512}, {20, 1, 16}, {1024, 8, 128}, {40, 8, 14},
	} {
		if got := threadShare(c.flows, c.cpus); got != c.want {
			t.Errorf("threadShare(%d flows, %d CPUs) = %d, want %d", c.flows, c.cpus, got, c.want)
		}
	}
}

// waitForPooledFlows waits until the pool's threads hold n flows.
func waitForPooledFlows(t *testing.T, p *receivePool, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		held := 0
		for _, c := range flowsPerThread(p) {
			held += c
		}
		if held == n {
			return
		}
	}
	t.Fatalf("the pool did not hold %d flows within 5 s", n)
}

// flowsPerThread is how many flows each of the pool's threads holds.
func flowsPerThread(p *receivePool) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var counts []int
	for _, th := range p.threads {
		th.mu.Lock()
		counts = append(counts, len(th.flows))
		th.mu.Unlock()
	}
	return counts
}

// TestReceivePoolStopEndsSilentFlows stops the pool while its flows wait
// for data that never comes: each ends at once with errStopped, and the
// pool takes no flow after.
func TestReceivePoolStopEndsSilentFlows(t *testing.T) {
	readers, _ := socketPairs(t, 4)
	var p receivePool
	s := &session{}
	meters := make([]flowMeter, len(readers))
	errs := make(chan error, len(readers))
	for i, fd := range readers[:3] {
		go func() { errs <- p.receive(fd, len(readers), usableCPUs(), &meters[i], s) }()
	}
	time.Sleep(100 * time.Millisecond)
	p.stop()
	for range 3 {
		select {
		case err := <-errs:
			if !errors.Is(err, errStopped) {
				t.Errorf("a flow ended with %v, want %v", err, errStopped)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a flow still waited 5 s after the pool stopped")
		}
	}
	if err := p.receive(readers[3], len(readers), usableCPUs(), &meters[3], s); !errors.Is(err, errStopped) {
		t.Errorf("a flow after the stop: %v, want %v", err, errStopped)
	}
}

// TestReceivePoolSleepsWithoutFlows lets a pool's flows end while the
// pool lives on, as an engine's does between a comparison's turns: its
// threads must then sleep. Waking every yieldInterval, two idle threads
// cost the process 140 to 230 switches in each window measured here.
func TestReceivePoolSleepsWithoutFlows(t *testing.T) {
	const flows = 2
	r := newPoolRun(t, flows)
	for i := range flows {
		r.read(i, flows)
	}
	for _, fd := range r.writers {
		if err := sendN(fd, make([]byte, 4096), 4096); err != nil {
			t.Fatal(err)
		}
	}
	r.finish(t)
	if n := quietestSwitches(t); n > 60 {
		t.Errorf("the process switched %d times in its quietest 0.2 s with %d idle receive threads", n, len(flowsPerThread(&r.p)))
	}
}

// quietestSwitches is the fewest context switches this process made in
// any of five windows of 0.2 s, taken after a collection: the quietest
// window leaves out most of the runtime's own occasional work. Idle, the
// process made 5 to 8 in most runs and up to 28 in a few of 80.
func quietestSwitches(t *testing.T) int {
	t.Helper()
	runtime.GC()
	quietest := -1
	for range 5 {
		before := processSwitches(t)
		time.Sleep(200 * time.Millisecond)
		if n := processSwitches(t) - before; quietest < 0 || n < quietest {
			quietest = n
		}
	}
	return quietest
}

// processSwitches sums the context switches of every thread of this
// process, as the kernel counts them.
func processSwitches(t *testing.T) int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, status := range tasks {
		data, err := os.ReadFile(status)
		if err != nil {
			continue // the thread has ended
		}
		for _, line := range strings.Split(string(data), "\n") {
			name, value, ok := strings.Cut(line, ":")
			if ok && strings.HasSuffix(name, "ctxt_switches") {
				n, _ := strconv.Atoi(strings.TrimSpace(value))
				sum += n
			}
		}
	}
	return sum
}
