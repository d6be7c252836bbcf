package runner

import (
	"math"
	"testing"
	"time"

	"cnbench/internal/cpu"
	"cnbench/internal/model"
)

// TestStealIsARateOverTheWholeSample reads a sample of an engine that
// idled two thirds of it, as sockperf does: the work it caused (softirq)
// is spread over the time traffic flowed, but the hypervisor's steal is
// not the engine's doing and stays a rate over the whole sample, or the
// engine's samples would look three times as disturbed as another's
// under the same hypervisor and be retaken for it.
func TestStealIsARateOverTheWholeSample(t *testing.T) {
	began := time.Now()
	before := cpuReading{at: began}
	after := cpuReading{at: began.Add(3 * time.Second), machine: cpu.Machine{Softirq: 300 * time.Millisecond, Steal: 300 * time.Millisecond}}
	x := exchange{receivedBytes: 1e9, receiveTime: time.Second, activeTime: time.Second}
	s, err := sampleFrom(model.Case{Workload: "tcp_stream"}, before, after, x)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Values[model.CPUStealPct]; math.Abs(got-10) > 1e-9 {
		t.Errorf("steal %.2f%% of a core, want 10%% (0.3 s over 3 s)", got)
	}
	if got := s.Values[model.CPUSoftirqPct]; math.Abs(got-30) > 1e-9 {
		t.Errorf("softirq %.2f%% of a core, want 30%% (0.3 s over the 1 s of traffic)", got)
	}
}
