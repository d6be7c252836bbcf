package engine

import (
	"runtime"
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
