package driver

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"cnbench/internal/model"
	"cnbench/internal/units"
)

// TestTableNamesEachEngineOnce checks the one table: unique names, every
// engine with a constructor and a port to publish, and external tools
// with their programs.
func TestTableNamesEachEngineOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Table {
		if seen[e.Name] {
			t.Errorf("%s listed twice", e.Name)
		}
		seen[e.Name] = true
		if e.new == nil || len(e.Ports) == 0 {
			t.Errorf("%s: constructor %v, ports %v", e.Name, e.new != nil, e.Ports)
		}
		if (e.Name == "native") != (len(e.Programs) == 0) {
			t.Errorf("%s: programs %v", e.Name, e.Programs)
		}
	}
	if got := AllPorts([]string{"native", "netperf"}); !slices.Equal(got, []int{nativePublishedPort, netperfControlPort, netperfDataPort}) {
		t.Errorf("ports of native and netperf: %v", got)
	}
}

func TestSupportsSkipsWhatAnEngineDoesNotRun(t *testing.T) {
	if err := Supports("native", "udp_max_rate"); err != nil {
		t.Errorf("native udp_max_rate: %v", err)
	}
	err := Supports("iperf3", "tcp_rr")
	if err == nil || (!errors.Is(err, ErrCannotRun)) {
		t.Fatalf("iperf3 tcp_rr: %v, want a skip", err)
	}
	if !strings.Contains(err.Error(), "it runs tcp_stream, udp_stream") && !strings.Contains(err.Error(), "is not installed") {
		t.Errorf("iperf3 tcp_rr: %v", err)
	}
	if err := Supports("nonesuch", "tcp_stream"); err == nil || errors.Is(err, ErrCannotRun) {
		t.Errorf("unknown engine: %v, want a failure, not a skip", err)
	}
}

func TestOfferedRateAndToolFlags(t *testing.T) {
	for _, tc := range []struct {
		rate     string
		bps, pps int64
		bad      bool
	}{{"", 0, 0, false}, {"100000pps", 0, 100000, false}, {"1gbit", 1e9, 0, false}, {"0pps", 0, 0, true}, {"fast", 0, 0, true}} {
		bps, pps, err := units.ParseOfferedRate(tc.rate)
		if (err != nil) != tc.bad || bps != tc.bps || pps != tc.pps {
			t.Errorf("%q: %d bit/s, %d pps, %v", tc.rate, bps, pps, err)
		}
	}
	udp := model.Case{Workload: "udp_stream", Params: model.Params{Flows: 1, MsgSize: 1000, Rate: "8mbit"}}
	if args, err := sockperfThroughputArgs(udp); err != nil || !slices.Equal(args, []string{"-m", "1000", "--mps=1000"}) {
		t.Errorf("sockperf at 8 Mbit/s of 1000-byte messages: %v %v", args, err)
	}
	udp.Params.Rate = "10pps"
	if _, err := iperf3Args(udp); !errors.Is(err, ErrCannotRun) {
		t.Errorf("iperf3 at packets per second: %v, want a skip", err)
	}
}
