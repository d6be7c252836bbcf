package measure

import (
	"time"

	"cnbench/internal/cpu"
)

// stealWatchInterval is how often a stealWatch reads /proc/stat, whose
// unit is 10 ms.
const stealWatchInterval = 100 * time.Millisecond

// stealMark is the machine's steal time so far, read at a moment.
type stealMark struct {
	at    time.Time
	steal time.Duration
}

// stealWatch reads the machine's steal time while a sample runs, so that
// steal can be judged over the part of the sample in which traffic
// flowed. sockperf idles 2 s of its 3.2 s: judged over the whole sample,
// its samples held three times the chances of a burst of steal that
// disturbed nothing they measured, and were retaken eight times as often
// as the native engine's, leaving sockperf only its calmest seconds.
type stealWatch struct {
	stop  chan struct{}
	done  chan struct{}
	marks []stealMark
}

func watchSteal() *stealWatch {
	w := &stealWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(stealWatchInterval)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case at := <-tick.C:
				if m, err := cpu.ReadMachine(); err == nil {
					w.marks = append(w.marks, stealMark{at: at, steal: m.Steal})
				}
			}
		}
	}()
	return w
}

// end stops the watch and returns its marks, in time order; nil for a
// nil watch.
func (w *stealWatch) end() []stealMark {
	if w == nil {
		return nil
	}
	close(w.stop)
	<-w.done
	return w.marks
}

// stealPct is the hypervisor's steal, in % of one core, over the sample's
// last busy time (where traffic flowed; the whole sample for most
// engines), measured from the latest mark taken by then, or from the
// sample's start.
func stealPct(before, after reading, busy time.Duration, marks []stealMark) float64 {
	from := stealMark{at: before.at, steal: before.machine.Steal}
	start := after.at.Add(-busy)
	for _, m := range marks {
		if m.at.After(start) {
			break
		}
		from = m
	}
	span := after.at.Sub(from.at)
	if span <= 0 {
		return 0
	}
	return 100 * (after.machine.Steal - from.steal).Seconds() / span.Seconds()
}
