package measure

import (
	"math"
	"testing"
	"time"

	"cnbench/internal/cpu"
	"cnbench/internal/engine"
	"cnbench/internal/model"
	"cnbench/internal/netstat"
	"cnbench/internal/workload"
)

// readings are two readings one second apart in which the client used
// 0.3 s and the server 0.2 s of CPU.
func readings() (before, after reading) {
	at := time.Now()
	before = reading{at: at}
	after = reading{at: at.Add(time.Second),
		client: cpu.Usage{User: 100 * time.Millisecond, System: 200 * time.Millisecond},
		server: cpu.Usage{System: 200 * time.Millisecond}}
	return before, after
}

// TestEveryWorkloadHasItsPrimaryMetric feeds each workload of the table
// what its engine would report and recomputes the derived figures.
func TestEveryWorkloadHasItsPrimaryMetric(t *testing.T) {
	rr := Exchange{Transactions: 20000, TxTime: time.Second, TxPerS: 20000, Tried: 20010, Unanswered: 10,
		LatencyUS: map[string]float64{model.LatencyP50US: 40}}
	exchanges := map[string]Exchange{
		workload.TCPStream:  {ReceivedBytes: 1e9, ReceiveTime: time.Second},
		workload.UDPStream:  {ReceivedBytes: 5e8, SentPackets: 400000, ReceivedPackets: 399000, Lost: 1000, ThroughputBPS: 4e9},
		workload.UDPMaxRate: {ReceivedBytes: 5e8, SentPackets: 400000, ReceivedPackets: 399000, Lost: 1000, ThroughputBPS: 4e9, MaxRateBPS: 3.9e9, Trials: 6},
		workload.TCPRR:      rr,
		workload.UDPRR:      rr,
		workload.TCPCRR:     rr,
		workload.Ping:       {Transactions: 10, TxTime: time.Second, Tried: 10, RTT: &engine.RTTStats{Min: 20e3, Avg: 30e3, Max: 50e3, Mdev: 5e3}},
	}
	before, after := readings()
	for _, name := range workload.Names() {
		x, ok := exchanges[name]
		if !ok {
			t.Errorf("%s: no exchange to measure it with", name)
			continue
		}
		s, err := sampleFrom(model.Case{Workload: name}, before, after, x, nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		primary := workload.PrimaryMetric(name)
		if _, ok := s.Values[primary]; !ok {
			t.Errorf("%s: no %s in %v", name, primary, s.Values)
		}
		if cpu := s.Values[model.CPUSenderPct] + s.Values[model.CPUReceiverPct]; math.Abs(cpu-50) > 1e-9 {
			t.Errorf("%s: sender and receiver %.3f%% of a core, want 50%% (0.5 s in 1 s)", name, cpu)
		}
	}
	s, _ := sampleFrom(model.Case{Workload: workload.TCPStream}, before, after, exchanges[workload.TCPStream], nil)
	if got := s.Values[model.ThroughputBPS]; got != 8e9 {
		t.Errorf("tcp_stream: %g bit/s, want 8e9 (1 GB in 1 s)", got)
	}
	// 0.5 CPU-seconds for 1 GB; at 8 Gbit/s that is 50% of a core.
	if got := s.Values[model.CPUSPerGB]; math.Abs(got-0.5) > 1e-9 {
		t.Errorf("tcp_stream: %g CPU-s/GB, want 0.5", got)
	}
	s, _ = sampleFrom(model.Case{Workload: workload.UDPRR}, before, after, rr, nil)
	if got := s.Values[model.CPUUSPerTx]; math.Abs(got-25) > 1e-9 {
		t.Errorf("udp_rr: %g CPU-us per transaction, want 25 (0.5 s over 20000)", got)
	}
	if got := s.Values[model.LossPct]; math.Abs(got-100*10.0/20010) > 1e-9 {
		t.Errorf("udp_rr: loss %g%%", got)
	}
}

// TestAWorkloadOfAKnownShapeNeedsNoCodeHere registers a workload in the
// table and measures it: a datagram stream over UDP gets a datagram
// stream's figures.
func TestAWorkloadOfAKnownShapeNeedsNoCodeHere(t *testing.T) {
	t.Cleanup(workload.Register(workload.Row{Name: "udp_burst", Transport: workload.UDP, Shape: workload.Stream, PrimaryMetric: model.ThroughputBPS}))
	before, after := readings()
	s, err := sampleFrom(model.Case{Workload: "udp_burst"}, before, after, Exchange{ReceivedBytes: 1e6, SentPackets: 1000, ReceivedPackets: 990, Lost: 10, ThroughputBPS: 8e6}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Values[model.ThroughputBPS] != 8e6 || s.Values[model.LossPct] != 1 {
		t.Errorf("udp_burst: %v", s.Values)
	}
	if _, err := sampleFrom(model.Case{Workload: "nonesuch"}, before, after, Exchange{}, nil); err == nil {
		t.Error("a workload outside the table: want an error")
	}
}

// TestJainByHand holds fairness_jain to (Σx)² / (n·Σx²) worked out by
// hand on fixed per-endpoint rates, through the sample a pattern's
// exchange becomes.
func TestJainByHand(t *testing.T) {
	for _, tc := range []struct {
		rates []float64
		want  float64
		why   string
	}{
		{[]float64{3e9, 3e9, 3e9}, 1, "equal shares: 81/(3·27)"},
		{[]float64{1e9, 2e9, 3e9, 4e9}, 100.0 / 120, "100/(4·30)"},
		{[]float64{2e9, 1e9}, 0.9, "9/(2·5)"},
		{[]float64{8e9, 0, 0, 0}, 0.25, "one takes all: 64/(4·64) = 1/n"},
		{[]float64{1e9, 1e9, 4e9}, 36.0 / 54, "36/(3·18)"},
	} {
		var sum float64
		for _, r := range tc.rates {
			sum += r
		}
		x := Exchange{ReceivedBytes: int64(sum / 8), ReceiveTime: 1e9, ThroughputBPS: sum, PerEndpoint: tc.rates}
		before, after := readings()
		s, err := sampleFrom(model.Case{Workload: workload.TCPStream}, before, after, x, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Values[model.FairnessJain]; math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("rates %v: fairness %.6f, want %.6f (%s)", tc.rates, got, tc.want, tc.why)
		}
		if got, want := s.Values[model.ThroughputPerEndpointBPS], sum/float64(len(tc.rates)); math.Abs(got-want) > 1e-3 {
			t.Errorf("rates %v: %.0f bit/s per endpoint, want %.0f", tc.rates, got, want)
		}
	}
}

// TestFlowSpreadByHand holds the per-flow figures of a stream to values
// worked out by hand: the slowest, 10th percentile, median, 90th
// percentile and fastest flow (nearest rank: the smallest rate with at
// least that share of the flows at or below it) and Jain's index over the
// flows; one flow has none of them.
func TestFlowSpreadByHand(t *testing.T) {
	for _, tc := range []struct {
		rates                            []float64
		min, p10, median, p90, max, jain float64
	}{
		{[]float64{4e9, 1e9, 3e9, 2e9}, 1e9, 1e9, 2.5e9, 4e9, 4e9, 100.0 / 120},
		{[]float64{2e9, 8e9, 2e9}, 2e9, 2e9, 2e9, 8e9, 8e9, 144.0 / 216},
		{[]float64{5e9, 5e9}, 5e9, 5e9, 5e9, 5e9, 5e9, 1},
		{[]float64{7e9, 1e9, 10e9, 3e9, 5e9, 2e9, 9e9, 4e9, 8e9, 6e9}, 1e9, 1e9, 5.5e9, 9e9, 10e9, 3025.0 / 3850},
		{[]float64{20, 3, 17, 1, 12, 9, 15, 6, 19, 11, 2, 14, 8, 18, 4, 16, 10, 7, 13, 5}, 1, 2, 10.5, 18, 20, 44100.0 / 57400},
	} {
		x := Exchange{ReceivedBytes: 1e9, ReceiveTime: 1e9, PerFlow: tc.rates}
		before, after := readings()
		s, err := sampleFrom(model.Case{Workload: workload.TCPStream}, before, after, x, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]float64{
			model.FlowThroughputMinBPS: tc.min, model.FlowThroughputP10BPS: tc.p10, model.FlowThroughputMedianBPS: tc.median,
			model.FlowThroughputP90BPS: tc.p90,
			model.FlowThroughputMaxBPS: tc.max, model.FlowFairnessJain: tc.jain,
		} {
			if got, ok := s.Values[name]; !ok || math.Abs(got-want) > 1e-9*max(1, want) {
				t.Errorf("flows %v: %s %v (present %v), want %v", tc.rates, name, got, ok, want)
			}
		}
	}
	x := Exchange{ReceivedBytes: 1e9, ReceiveTime: 1e9, PerFlow: []float64{8e9}}
	before, after := readings()
	s, err := sampleFrom(model.Case{Workload: workload.TCPStream}, before, after, x, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Values[model.FlowFairnessJain]; ok {
		t.Errorf("one flow: fairness over flows %v, want none", v)
	}
}

// TestUDPRoundTripsCarryTheKernelsLoss reads udp_rr's loss from the
// kernel's counters of the server's namespace: the requests it did not
// deliver over those sent, and where the client shares that namespace,
// half the datagrams delivered for the requests.
func TestUDPRoundTripsCarryTheKernelsLoss(t *testing.T) {
	rr := Exchange{Transactions: 990, TxTime: time.Second, TxPerS: 990, Tried: 1000, Unanswered: 10}
	for _, tt := range []struct {
		name      string
		shared    bool
		delivered uint64
		want      float64
	}{
		{"apart", false, 990, 1},
		{"apart, none lost", false, 1000, 0},
		{"sharing a namespace", true, 1980, 1},
	} {
		before, after := readings()
		before.local, after.local, after.shared = true, true, tt.shared
		before.udp = netstat.UDP{InDatagrams: 500, RcvbufErrors: 3}
		after.udp = netstat.UDP{InDatagrams: 500 + tt.delivered, RcvbufErrors: 5}
		s, err := sampleFrom(model.Case{Workload: workload.UDPRR}, before, after, rr, nil)
		if err != nil {
			t.Fatal(err)
		}
		v := s.Values
		if v[model.UDPInDatagrams] != float64(tt.delivered) || v[model.UDPRcvbufErrors] != 2 || math.Abs(v[model.UDPKernelLossPct]-tt.want) > 1e-9 {
			t.Errorf("%s: delivered %v, rcvbuf drops %v, kernel's loss %v%%, want %d, 2, %v%%",
				tt.name, v[model.UDPInDatagrams], v[model.UDPRcvbufErrors], v[model.UDPKernelLossPct], tt.delivered, tt.want)
		}
	}
	// Counters this machine did not read give no kernel loss.
	before, after := readings()
	s, _ := sampleFrom(model.Case{Workload: workload.UDPRR}, before, after, rr, nil)
	if _, ok := s.Values[model.UDPKernelLossPct]; ok {
		t.Error("a kernel loss without the kernel's counters")
	}
}

// TestRetransmittedPayloadIsNotCountedTwice: 1 GB received through
// frames that carried 1.02 GB of payload, 20 MB of it retransmitted
// (first copies dropped after the receiver's interface counted them), is
// an exact count once the retransmitted payload is taken off; so is 1 GB
// received through frames that carried 1 GB with 250 MB retransmitted
// (first copies dropped before the count, as OVS's userspace datapath
// drops them); 0.9 GB of the 1 GB with 20 MB retransmitted is 10%
// short of the least the wire allows; where the engine does not know
// its retransmissions, the ratio shows the 2% as it is.
func TestRetransmittedPayloadIsNotCountedTwice(t *testing.T) {
	for _, tc := range []struct {
		received, payload, retransmitted, want float64
	}{
		{1e9, 1e9, 250e6, 1},
		{0.9e9, 1e9, 20e6, 0.9 / 0.98},
		{1.1e9, 1e9, 20e6, 1.1},
	} {
		if r := appWireRatio(tc.received, tc.payload, tc.retransmitted); math.Abs(r-tc.want) > 1e-9 {
			t.Errorf("%v received, %v on the wire, %v retransmitted: ratio %v, want %v", tc.received, tc.payload, tc.retransmitted, r, tc.want)
		}
	}
	const frames = 700_000
	wire := netstat.Counters{RxBytes: 1_020_000_000 + frames*tcpFrameOverhead, RxPackets: frames}
	before, after := reading{}, reading{wire: wire}
	x := Exchange{ReceivedBytes: 1_000_000_000, ReceiveTime: time.Second,
		RetransmittedBytes: 20_000_000, RetransmittedBytesKnown: true}
	v := map[string]float64{}
	if err := tcpStreamValues(v, x, before, after, 1, false); err != nil {
		t.Fatal(err)
	}
	if r := v[model.AppWireRatio]; math.Abs(r-1) > 1e-9 {
		t.Errorf("with the retransmitted payload known: ratio %v (want 1)", r)
	}
	x.RetransmittedBytesKnown = false
	if err := tcpStreamValues(v, x, before, after, 1, false); err != nil {
		t.Fatal(err)
	}
	if r := v[model.AppWireRatio]; math.Abs(r-1/1.02) > 1e-9 {
		t.Errorf("without it: ratio %v, want %v", r, 1/1.02)
	}
	// Over IPv6 each frame carries 20 header bytes more: the same
	// payload under IPv6 headers is the payload only when they are
	// taken off as such (700,000 frames: 14 MB, 1.4%).
	after6 := reading{wire: netstat.Counters{RxBytes: 1_000_000_000 + frames*tcpFrameOverhead6, RxPackets: frames}}
	x = Exchange{ReceivedBytes: 1_000_000_000, ReceiveTime: time.Second, RetransmittedBytesKnown: true}
	for _, v6 := range []bool{true, false} {
		if err := tcpStreamValues(v, x, before, after6, 1, v6); err != nil {
			t.Fatal(err)
		}
		if r := v[model.AppWireRatio]; (math.Abs(r-1) < 1e-9) != v6 {
			t.Errorf("IPv6 frames counted as IPv6 %v: ratio %v", v6, r)
		}
	}
}
