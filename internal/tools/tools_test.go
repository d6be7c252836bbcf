package tools

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseIperf3TCP(t *testing.T) {
	r, err := ParseIperf3(read(t, "iperf3-tcp-2flows.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.ReceivedBytes != 4692115456 || r.SentBytes != 4705484800 {
		t.Errorf("bytes sent %d received %d", r.SentBytes, r.ReceivedBytes)
	}
	if r.ReceiveTime != 2000216*time.Microsecond {
		t.Errorf("receive time %v", r.ReceiveTime)
	}
	if !r.HasRetransmits || r.Retransmits != 0 {
		t.Errorf("retransmits %d known %v", r.Retransmits, r.HasRetransmits)
	}
	if r.MSS != 32768 {
		t.Errorf("MSS %d, want the report's tcp_mss_default 32768", r.MSS)
	}
	if len(r.Intervals) != 2 || r.Intervals[0].Bytes != 2437939200 {
		t.Errorf("intervals %+v", r.Intervals)
	}
	// Each stream's receiver bytes over its receiver's seconds, from the
	// report's end.streams.
	want := []float64{2329935872 * 8 / 2.000144, 2362179584 * 8 / 2.000144}
	if len(r.FlowBPS) != 2 || math.Abs(r.FlowBPS[0]-want[0]) > 1 || math.Abs(r.FlowBPS[1]-want[1]) > 1 {
		t.Errorf("per-stream rates %v, want %v", r.FlowBPS, want)
	}
}

func TestParseIperf3UDP(t *testing.T) {
	r, err := ParseIperf3(read(t, "iperf3-udp-500M.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Packets != 89253 || r.LostPackets != 2909 || r.LostPercent < 3.25 || r.LostPercent > 3.26 {
		t.Errorf("packets %d lost %d (%.2f%%)", r.Packets, r.LostPackets, r.LostPercent)
	}
	if r.HasRetransmits {
		t.Error("UDP has no retransmits")
	}
	if r.ReceivedBytes != 120881600 || r.JitterMS < 0.002 {
		t.Errorf("received %d bytes, jitter %v ms", r.ReceivedBytes, r.JitterMS)
	}
	if r.ReceivedBytes >= r.SentBytes {
		t.Errorf("received %d of %d sent despite loss", r.ReceivedBytes, r.SentBytes)
	}
}

func TestParseIperf3Error(t *testing.T) {
	_, err := ParseIperf3(read(t, "iperf3-refused.json"))
	if err == nil || !strings.Contains(err.Error(), "unable to connect") {
		t.Fatalf("got %v, want iperf3's own error", err)
	}
	if _, err := ParseIperf3([]byte("not json")); err == nil {
		t.Fatal("accepted garbage")
	}
}

func TestParseSockperfPingPong(t *testing.T) {
	r, err := ParseSockperfPingPong(read(t, "sockperf-pp-tcp-64.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Transactions != 173870 || r.AllTransactions != 225715 || r.ValidTime != 1550*time.Millisecond || r.RunTime != 2*time.Second {
		t.Errorf("%d transactions in %v, %d in %v", r.Transactions, r.ValidTime, r.AllTransactions, r.RunTime)
	}
	if r.AvgRTTUS != 8.856 || r.StddevUS != 12.976 || r.MinUS != 6.985 || r.MaxUS != 2762.873 {
		t.Errorf("rtt avg %v sd %v min %v max %v", r.AvgRTTUS, r.StddevUS, r.MinUS, r.MaxUS)
	}
	if r.PercentilesUS[50] != 7.807 || r.PercentilesUS[99] != 17.293 || r.PercentilesUS[99.9] != 35.236 {
		t.Errorf("percentiles %v", r.PercentilesUS)
	}
	if _, err := ParseSockperfPingPong(read(t, "sockperf-tp-tcp.txt")); err == nil {
		t.Error("throughput output accepted as ping-pong")
	}
	// Over UDP, sockperf's default, the summary reads the same.
	u, err := ParseSockperfPingPong(read(t, "sockperf-pp-udp-64.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if u.Transactions != 47715 || u.AllTransactions != 90759 || u.ValidTime != 550*time.Millisecond || u.AvgRTTUS != 11.464 {
		t.Errorf("udp: %d transactions in %v, avg %v us", u.Transactions, u.ValidTime, u.AvgRTTUS)
	}
}

func TestParseSockperfThroughput(t *testing.T) {
	r, err := ParseSockperfThroughput(read(t, "sockperf-tp-tcp.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Messages != 67614 || r.Mbps != 16757.812 || r.Time != 2001*time.Millisecond {
		t.Errorf("%+v", r)
	}
	// Over UDP at a set message rate, as the udp_stream engine runs it.
	r, err = ParseSockperfThroughput(read(t, "sockperf-tp-udp-1400.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Messages != 4467 || r.Mbps != 47.691 || r.Time != time.Second {
		t.Errorf("%+v", r)
	}
}

func TestParsePing(t *testing.T) {
	r, err := ParsePing(read(t, "ping-lo-5.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Transmitted != 5 || r.Received != 5 || r.LossPct != 0 || len(r.RTTsUS) != 5 {
		t.Errorf("%+v", r)
	}
	if r.MinUS != 37 || r.AvgUS != 43 || r.MaxUS != 49 || r.MdevUS != 4 {
		t.Errorf("rtt %v/%v/%v/%v", r.MinUS, r.AvgUS, r.MaxUS, r.MdevUS)
	}
	big, err := ParsePing(read(t, "ping-lo-32k.txt"))
	if err != nil || len(big.RTTsUS) != 3 {
		t.Errorf("32 KiB payload: %+v %v", big, err)
	}
	lost, err := ParsePing(read(t, "ping-no-reply.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if lost.LossPct != 100 || lost.Received != 0 || len(lost.RTTsUS) != 0 {
		t.Errorf("no reply: %+v", lost)
	}
}

func TestParseNetperfStream(t *testing.T) {
	r, err := ParseNetperf(read(t, "netperf-tcp-stream.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.ReceivedBytes != 4447272960 || r.SentBytes != 4447272960 || r.Elapsed != time.Second {
		t.Errorf("sent %d received %d in %v", r.SentBytes, r.ReceivedBytes, r.Elapsed)
	}
	if r.ThroughputBPS != 35573.24e6 {
		t.Errorf("throughput %v bit/s, want netperf's 35573.24 10^6bits/s", r.ThroughputBPS)
	}
	if !r.HasRetransmits || r.Retransmits != 0 {
		t.Errorf("retransmits %d known %v", r.Retransmits, r.HasRetransmits)
	}
}

// A UDP_STREAM, unpaced on loopback: the sender's datagrams, of which
// the receiver's socket took 72%, and the throughput of what arrived.
func TestParseNetperfUDPStream(t *testing.T) {
	r, err := ParseNetperf(read(t, "netperf-udp-stream.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.SendCalls != 146983 || r.ReceiveCalls != 106465 || r.SentBytes != 146983*1472 || r.ReceivedBytes != 106465*1472 {
		t.Errorf("sent %d datagrams (%d bytes), received %d (%d bytes)", r.SendCalls, r.SentBytes, r.ReceiveCalls, r.ReceivedBytes)
	}
	if r.HasRetransmits {
		t.Errorf("a UDP stream with retransmits %d", r.Retransmits)
	}
	if math.Abs(r.ThroughputBPS-float64(r.ReceivedBytes)*8/r.Elapsed.Seconds()) > 1e5 {
		t.Errorf("throughput %v bit/s is not what arrived over %v", r.ThroughputBPS, r.Elapsed)
	}
}

func TestParseNetperfRequestResponse(t *testing.T) {
	for _, tc := range []struct {
		file          string
		rate, mean    float64
		p50, p90, p99 float64
		transactions  int64
		retransKnown  bool
	}{
		{"netperf-tcp-rr.txt", 48154.061, 20.71, 20, 21, 31, 48154, true},
		// Where the kernel gave no count, netperf prints -1: UDP has
		// none, and TCP_CRR's connections close before it asks.
		{"netperf-tcp-crr.txt", 14183.560, 70.39, 69, 78, 113, 14184, false},
		{"netperf-udp-rr.txt", 53521.950, 18.63, 18, 19, 29, 53522, false},
	} {
		r, err := ParseNetperf(read(t, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		got := []float64{r.TransactionRate, r.MeanUS, r.PercentilesUS[50], r.PercentilesUS[90], r.PercentilesUS[99]}
		want := []float64{tc.rate, tc.mean, tc.p50, tc.p90, tc.p99}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: rate, mean, p50, p90, p99 = %v, want %v", tc.file, got, want)
				break
			}
		}
		if r.Transactions() != tc.transactions || r.HasRetransmits != tc.retransKnown || r.ThroughputBPS != 0 {
			t.Errorf("%s: %d transactions, retransmits known %v, %v bit/s", tc.file, r.Transactions(), r.HasRetransmits, r.ThroughputBPS)
		}
		if r.MinUS <= 0 || r.MaxUS < r.PercentilesUS[99] {
			t.Errorf("%s: min %v max %v", tc.file, r.MinUS, r.MaxUS)
		}
	}
}

func TestParseNetperfError(t *testing.T) {
	_, err := ParseNetperf(read(t, "netperf-refused.txt"))
	if err == nil || !strings.Contains(err.Error(), "are you sure there is a netserver listening") {
		t.Fatalf("got %v, want netperf's own complaint", err)
	}
	if _, err := ParseNetperf([]byte("ELAPSED_TIME=1.00\nTHROUGHPUT_UNITS=Trans/s\n")); err == nil {
		t.Fatal("accepted a run that moved nothing")
	}
}
