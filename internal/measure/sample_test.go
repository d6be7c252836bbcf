package measure

import (
	"math"
	"testing"
	"time"

	"cnbench/internal/cpu"
	"cnbench/internal/model"
)

// TestStealIsJudgedWhileTrafficFlowed reads a sample of an engine that
// idled its first two thirds, as sockperf does, with steal read each
// second: the work it caused (softirq) is spread over the second of
// traffic, and the hypervisor's steal is judged over that second alone,
// since a burst before it disturbed nothing the engine measured. An
// engine busy throughout is judged over the whole sample.
func TestStealIsJudgedWhileTrafficFlowed(t *testing.T) {
	began := time.Now()
	before := reading{at: began}
	after := reading{at: began.Add(3 * time.Second), machine: cpu.Machine{Softirq: 300 * time.Millisecond, Steal: 350 * time.Millisecond}}
	marks := []stealMark{{began.Add(time.Second), 250 * time.Millisecond}, {began.Add(2 * time.Second), 300 * time.Millisecond}}
	idler := Exchange{ReceivedBytes: 1e9, ReceiveTime: time.Second, ActiveTime: time.Second}
	s, err := sampleFrom(model.Case{Workload: "tcp_stream"}, before, after, idler, marks)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Values[model.CPUStealPct]; math.Abs(got-5) > 1e-9 {
		t.Errorf("steal %.2f%% of a core, want 5%% (0.05 s in the last second)", got)
	}
	if got := s.Values[model.CPUSoftirqPct]; math.Abs(got-30) > 1e-9 {
		t.Errorf("softirq %.2f%% of a core, want 30%% (0.3 s over the 1 s of traffic)", got)
	}
	busy := Exchange{ReceivedBytes: 3e9, ReceiveTime: 3 * time.Second}
	s, err = sampleFrom(model.Case{Workload: "tcp_stream"}, before, after, busy, marks)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Values[model.CPUStealPct], 100*0.35/3; math.Abs(got-want) > 1e-9 {
		t.Errorf("steal %.2f%% of a core for an engine busy throughout, want %.2f%% (0.35 s over 3 s)", got, want)
	}
}

// TestStealWatchReadsTheMachine watches /proc/stat for a few intervals:
// marks in time order, steal never going back.
func TestStealWatchReadsTheMachine(t *testing.T) {
	w := watchSteal()
	time.Sleep(4*stealWatchInterval + stealWatchInterval/2)
	marks := w.end()
	if len(marks) < 3 {
		t.Fatalf("%d marks in 4.5 intervals, want at least 3", len(marks))
	}
	for i := 1; i < len(marks); i++ {
		if !marks[i].at.After(marks[i-1].at) || marks[i].steal < marks[i-1].steal {
			t.Errorf("mark %d %+v after %+v", i, marks[i], marks[i-1])
		}
	}
	if (*stealWatch)(nil).end() != nil {
		t.Error("a nil watch has marks")
	}
}
