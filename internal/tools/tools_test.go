package tools

import (
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
	if len(r.Intervals) != 2 || r.Intervals[0].Bytes != 2437939200 {
		t.Errorf("intervals %+v", r.Intervals)
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
