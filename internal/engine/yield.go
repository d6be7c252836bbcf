package engine

import (
	"runtime"
	"sync"
	"time"
)

// The runtime's monitor thread takes the P away from a goroutine that has
// not been through the scheduler for 10ms, even while it sits in a system
// call, and then polls every 20µs for a while in case it must do so again.
// A flow that only makes system calls would provoke that cycle forever,
// costing thousands of wake-ups a second on the cores being measured. A
// cheap voluntary yield every few milliseconds keeps the monitor asleep.
const yieldInterval = 5 * time.Millisecond

// yielder yields at most once per interval, using clock readings the
// caller takes anyway.
type yielder struct {
	interval int64
	next     int64
}

// newYielder paces one of flows concurrent flows. What matters is that
// every P passes through the scheduler often enough, so with more flows
// than Ps each flow yields less often; a yield on a locked thread costs a
// few microseconds, which thousands of flows would otherwise multiply.
func newYielder(flows int) yielder {
	perP := max(1, flows/runtime.GOMAXPROCS(0))
	return yielder{interval: int64(yieldInterval) * int64(perP)}
}

// maybeYield yields if now is past the next yield time and reports whether
// it did, so a caller timing work can restart its clock.
func (y *yielder) maybeYield(now int64) bool {
	if now < y.next {
		return false
	}
	runtime.Gosched()
	y.next = now + y.interval
	return true
}

// keepASpareP gives the runtime a second P when the engine may run on one
// CPU only, as it does when pinned. A flow blocked in read holds its P;
// the monitor leaves such a P alone for up to 10ms only while another P
// is idle, and otherwise takes it away after 20µs and keeps polling every
// 20µs. With one P, every round trip slower than that (OVS's userspace
// datapath, NAT) paid for a P hand-off on return from read, and the
// monitor woke up to 50,000 times a second next to the measured threads:
// against sockperf on OVS the round trip was 1.32 to 1.40 times longer
// with one P and 1.06 to 1.12 times with two. The spare P stays idle, so
// it costs no CPU.
func keepASpareP() {
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
}

// flowThreads counts the locked threads the engine's flows run on.
var flowThreads struct {
	sync.Mutex
	n int
}

// maxProcs bounds the Ps holdP adds: one per flow thread the engine may
// run (workload.MaxEngineSockets) and a spare.
const maxProcs = maxLiveSockets + 1

// holdP counts a flow's thread for as long as it runs, and gives the
// runtime a P per such thread and a spare. A flow blocked in a system call
// keeps its P until the monitor takes it, and wants one back at once on
// return; with fewer Ps than flow threads they take turns at every
// system call, as the keepASpareP comment tells of one. An engine serving
// a host's 20 clients, each with its own request/response flow, made
// 94,000-98,000 transactions a second with the machine's two Ps where an
// engine per client, two Ps each, made 127,000. Ps beyond the running
// threads stay idle and cost no CPU. The count never lowers GOMAXPROCS,
// which would stop the world during other flows' runs.
func holdP() (release func()) {
	flowThreads.Lock()
	flowThreads.n++
	if want := min(flowThreads.n+1, maxProcs); runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
	flowThreads.Unlock()
	return func() {
		flowThreads.Lock()
		flowThreads.n--
		flowThreads.Unlock()
	}
}
