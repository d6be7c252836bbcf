package runner

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"cnbench/internal/model"
	"cnbench/internal/testutil"
)

// TestContainerModesRunEveryWorkload runs the datagram, connect and echo
// workloads through what Docker and a CNI plugin build, in chc, and holds
// each to what was sent and to the kernel's own counters: a stream's
// datagrams to the frames the server's interfaces received, a
// request/response's rate to its round trips, the echoes to the count
// asked for.
func TestContainerModesRunEveryWorkload(t *testing.T) {
	var use []string
	for _, m := range []string{"docker:bridge", "cni:bridge"} {
		if has, why := testutil.ModeExpected(m); !has {
			t.Logf("skipping %s: %s", m, why)
			continue
		}
		use = append(use, m)
	}
	if len(use) == 0 {
		t.Skip("skipped: neither Docker nor the CNI plugins are installed")
	}
	cases := runScenarioText(t, `{name: containers, duration: 300ms, warmup: 0s, samples: 1, modes: [`+strings.Join(use, ", ")+`], topologies: [chc], workloads: [
  {type: udp_stream, rate: 100mbit, msg_size: 1000, receive_buffer: 16M},
  {type: udp_rr, request_size: 64, response_size: 64},
  {type: tcp_crr, request_size: 64, response_size: 64},
  {type: ping, count: 20, interval: 10ms}]}`)
	seen := map[string]int{}
	for _, c := range cases {
		seen[c.Mode]++
		if v, ok := measured(t, c); ok {
			t.Logf("%s: %v", c.Key, v)
			if err := heldToCounters(c.Workload, v); err != nil {
				t.Errorf("%s: %v", c.Key, err)
			}
		}
	}
	for _, m := range use {
		if seen[m] != 4 {
			t.Errorf("%s: %d cases, want 4", m, seen[m])
		}
	}
}

// heldToCounters checks a sample of a workload against what was sent and
// what the kernel counted.
func heldToCounters(workload string, v map[string]float64) error {
	sent, got := v[model.SentPackets], v[model.ReceivedPackets]
	switch workload {
	case "udp_stream":
		// 100 Mbit/s of 1000-byte datagrams for 300 ms is 3750; a busy
		// machine may offer fewer, never more.
		if sent < 1000 || sent > 3900 || got+v[model.LossPct]/100*sent-sent > 0.5 || got > sent {
			return fmt.Errorf("%.0f datagrams sent, %.0f received, %.2f%% lost", sent, got, v[model.LossPct])
		}
		if v[model.ReceivedBytes] != got*1000 {
			return fmt.Errorf("%.0f bytes in %.0f datagrams of 1000 bytes", v[model.ReceivedBytes], got)
		}
		// Every datagram received or dropped at the socket crossed the
		// server's interface, and besides them only the flows' control
		// connection and neighbour discovery did.
		extra := v[model.WireRxPackets] - got - v[model.UDPRcvbufErrors]
		if extra < 0 || extra > 60 {
			return fmt.Errorf("the server's interfaces received %.0f frames for %.0f datagrams (%.0f dropped at the socket)", v[model.WireRxPackets], got, v[model.UDPRcvbufErrors])
		}
	case "udp_rr", "tcp_crr":
		// One transaction at a time: the rate is the inverse of the mean
		// round trip, less the time between them.
		rate, mean := v[model.TransactionsPerS], v[model.LatencyMeanUS]
		if busy := rate * mean / 1e6; busy < 0.5 || busy > 1.02 {
			return fmt.Errorf("%.0f tx/s at a mean of %.1f us is %.2f of the time in transactions", rate, mean, busy)
		}
		if workload == "udp_rr" && (got > sent || sent-got > 0.01*sent || math.Abs(rate*0.3-got) > 0.1*got) {
			return fmt.Errorf("%.0f requests, %.0f answered, %.0f tx/s over 300 ms", sent, got, rate)
		}
	case "ping":
		if sent != 20 || got != 20 || v[model.LossPct] != 0 {
			return fmt.Errorf("%.0f echoes sent, %.0f answered, %.1f%% lost; want 20 of 20", sent, got, v[model.LossPct])
		}
		if !(v[model.RTTMinUS] > 0 && v[model.RTTMinUS] <= v[model.RTTAvgUS] && v[model.RTTAvgUS] <= v[model.RTTMaxUS]) {
			return fmt.Errorf("rtt min/avg/max %.1f/%.1f/%.1f us", v[model.RTTMinUS], v[model.RTTAvgUS], v[model.RTTMaxUS])
		}
	}
	return nil
}
