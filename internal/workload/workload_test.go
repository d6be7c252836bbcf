package workload

import (
	"slices"
	"testing"

	"cnbench/internal/model"
)

// The table's rows must be self-consistent: a default the bounds refuse,
// or a metric the model does not know, would only show up mid-run.
func TestRowsAreConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range Names() {
		r, ok := Lookup(name)
		if !ok || r.Name != name {
			t.Fatalf("Lookup(%q) = %+v, %v", name, r, ok)
		}
		if seen[name] {
			t.Errorf("%s: listed twice", name)
		}
		seen[name] = true
		if _, ok := model.Metrics[r.PrimaryMetric]; !ok {
			t.Errorf("%s: primary metric %q is not a model metric", name, r.PrimaryMetric)
		}
		if r.Transport == 0 || r.Shape == 0 || len(r.Axes) == 0 {
			t.Errorf("%s: transport, shape or axes missing: %+v", name, r)
		}
		d, b := r.Defaults, r.Bounds
		for _, size := range []struct {
			key string
			n   int
		}{{KeyMsgSize, d.MsgSize}, {KeyRequestSize, d.RequestSize}, {KeyResponseSize, d.ResponseSize}} {
			if r.Takes(size.key) && (size.n < b.MinSize || size.n > b.MaxSize) {
				t.Errorf("%s: default %s %d outside %d..%d", name, size.key, size.n, b.MinSize, b.MaxSize)
			}
		}
		if r.Takes(KeyFlows) != (d.Flows > 0) {
			t.Errorf("%s: takes flows %v, default flows %d", name, r.Takes(KeyFlows), d.Flows)
		}
		if r.Takes("interval") && (d.Interval <= 0 || d.Interval > b.MaxInterval || b.MaxCount < 1) {
			t.Errorf("%s: interval %v, bounds %+v", name, d.Interval, b)
		}
		if r.Takes("loss_threshold") != (d.LossThresholdPct > 0) {
			t.Errorf("%s: loss threshold %v", name, d.LossThresholdPct)
		}
	}
	if _, ok := Lookup("tcp_nothing"); ok {
		t.Error("Lookup found a workload the table lacks")
	}
}

func TestPrimaryMetric(t *testing.T) {
	for name, want := range map[string]string{
		TCPStream: model.ThroughputBPS, UDPStream: model.ThroughputBPS, TCPRR: model.TransactionsPerS,
		UDPRR: model.TransactionsPerS, TCPCRR: model.ConnectionsPerS, Ping: model.RTTAvgUS,
		UDPMaxRate: model.MaxRateBPS, "unknown": model.ThroughputBPS,
	} {
		if got := PrimaryMetric(name); got != want {
			t.Errorf("PrimaryMetric(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestByEngine(t *testing.T) {
	want := map[string][]string{
		"iperf3":   {TCPStream, UDPStream},
		"sockperf": {TCPRR, UDPStream, UDPRR},
		"ping":     {Ping},
		"netperf":  {TCPStream, TCPRR, TCPCRR, UDPStream, UDPRR},
	}
	got := ByEngine()
	if len(got) != len(want) {
		t.Fatalf("ByEngine() = %v", got)
	}
	for e, ws := range want {
		if !slices.Equal(got[e], ws) {
			t.Errorf("%s runs %v, want %v", e, got[e], ws)
		}
	}
}

func TestRegister(t *testing.T) {
	undo := Register(Row{Name: "sctp_stream", Axes: streamAxes, PrimaryMetric: model.ThroughputBPS})
	if _, ok := Lookup("sctp_stream"); !ok || Names()[len(Names())-1] != "sctp_stream" {
		t.Fatalf("registered row missing: %v", Names())
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("registering a taken name did not panic")
			}
		}()
		Register(Row{Name: TCPStream})
	}()
	undo()
	if _, ok := Lookup("sctp_stream"); ok || len(Names()) != 7 {
		t.Errorf("unregister left %v", Names())
	}
}
