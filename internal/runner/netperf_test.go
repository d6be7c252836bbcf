package runner

import (
	"math"
	"testing"

	"cnbench/internal/model"
	"cnbench/internal/stats"
	"cnbench/internal/testutil"
)

// TestNetperfEngine runs every workload netperf has next to the native
// engine, through NAT, whose published ports netperf's control and data
// connections both cross: each netperf case is measured, its stream's
// bytes match what the receiver's interfaces counted, and its numbers
// are of the native engine's order on the same path. Two turns each,
// held by their medians: one sample each on this VM once read netperf's
// udp_rr at 13,123 tx/s beside the native engine's 26,529, which had
// found its CPUs awake (p50 10.9 us against 76).
func TestNetperfEngine(t *testing.T) {
	testutil.RequireTool(t, "netperf")
	testutil.RequireTool(t, "netserver")
	cases := runScenarioText(t, `
name: netperf
duration: 1s
warmup: 0s
samples: 2
modes: [nat]
topologies: [chc]
workloads:
  - {type: tcp_stream, msg_size: 128K}
  - {type: tcp_rr, request_size: 64, response_size: 64}
  - {type: tcp_crr, request_size: 64, response_size: 64}
  - {type: udp_rr, request_size: 64, response_size: 64}
  - {type: udp_stream, msg_size: 1472}
  - {type: tcp_stream, msg_size: 128K, flows: 2}
engines: [native, netperf]
`)
	native := map[string]map[string]float64{}
	for _, c := range cases {
		if c.Engine == "native" {
			if v, ok := medians(t, c); ok {
				native[pathKey(&c.Case)] = v
			}
		}
	}
	for _, c := range cases {
		if c.Engine != "netperf" {
			continue
		}
		if c.Params.Flows > 1 {
			if c.Status != model.StatusSkipped {
				t.Errorf("%s: %s, want skipped: netperf runs one flow per process", c.Key, c.Status)
			}
			continue
		}
		v, ok := medians(t, c)
		if !ok {
			continue
		}
		n := native[pathKey(&c.Case)]
		t.Logf("%-50s netperf %v", c.Key, v)
		t.Logf("%-50s native  %v", c.Key, n)
		metric := model.TransactionsPerS
		if c.Workload == "udp_stream" {
			// What netserver says it received is what reached the
			// receiver's link less what its full socket buffer dropped,
			// by the kernel's counters; the loss is what of the sent
			// datagrams did not arrive.
			metric = model.ThroughputBPS
			for _, smp := range c.Samples {
				sv := smp.Values
				sent, got := sv[model.SentPackets], sv[model.ReceivedPackets]
				kernel := sv[model.WireRxPackets] - sv[model.UDPRcvbufErrors]
				if !(got > 0 && got <= sent) || math.Abs(got-kernel) > 0.01*kernel+50 {
					t.Errorf("%s sample %d: sent %.0f datagrams, netserver received %.0f; the link took %.0f and the socket buffer dropped %.0f",
						c.Key, smp.Index, sent, got, sv[model.WireRxPackets], sv[model.UDPRcvbufErrors])
				}
				if want := 100 * (sent - got) / sent; math.Abs(sv[model.LossPct]-want) > 0.001 {
					t.Errorf("%s sample %d: loss %.3f%%, want %.3f%% of %.0f sent", c.Key, smp.Index, sv[model.LossPct], want, sent)
				}
			}
			t.Logf("%s: netperf %.2f Gbit/s, native %.2f (each unpaced, their loss %.1f%% and %.1f%%)", c.Key,
				v[metric]/1e9, n[metric]/1e9, v[model.LossPct], n[model.LossPct])
			continue
		}
		if c.Workload == "tcp_stream" {
			metric = model.ThroughputBPS
			if r := v[model.AppWireRatio]; r < 0.98 || r > 1.02 {
				t.Errorf("%s: received bytes over the wire's payload %.4f", c.Key, r)
			}
		} else {
			mean := v[model.LatencyMeanUS]
			if !(mean > 1 && v[model.LatencyP50US] > 0 && v[model.LatencyP99US] >= v[model.LatencyP50US]) {
				t.Errorf("%s: mean %.1f us, p50 %.1f, p99 %.1f", c.Key, mean, v[model.LatencyP50US], v[model.LatencyP99US])
			}
			// One transaction outstanding: the rate is the round
			// trip's inverse.
			if tps := v[model.TransactionsPerS]; tps < 0.5e6/mean || tps > 2e6/mean {
				t.Errorf("%s: %.0f tx/s against a mean round trip of %.1f us", c.Key, tps, mean)
			}
		}
		// Engines that measure the same path land within a factor of two
		// of each other even on a loaded machine; a wrong unit or a
		// misread field does not.
		if r := v[metric] / n[metric]; !(r > 0.5 && r < 2) {
			t.Errorf("%s: %s %.4g with netperf, %.4g with the native engine", c.Key, metric, v[metric], n[metric])
		}
	}
	// A process's CPU as a share of a core and per transaction are the
	// same seconds over the same time. netperf's tcp_crr idles about 4 s
	// after its test, and its share once read a third of what its CPU
	// per transaction and rate gave.
	for _, c := range cases {
		if c.Status != model.StatusOK || c.Workload == "tcp_stream" || c.Workload == "udp_stream" {
			continue
		}
		for _, smp := range c.Samples {
			sv := smp.Values
			share := sv[model.CPUSenderPct] + sv[model.CPUReceiverPct]
			fromTx := sv[model.CPUUSPerTx] * sv[model.TransactionsPerS] / 1e4
			if !(share > 0) || math.Abs(share-fromTx) > 0.05*share {
				t.Errorf("%s sample %d: sender and receiver %.1f%% of a core, but %.1f us per transaction at %.0f tx/s make %.1f%%",
					c.Key, smp.Index, share, sv[model.CPUUSPerTx], sv[model.TransactionsPerS], fromTx)
			}
		}
	}
}

// medians are each metric's median over a measured case's samples.
func medians(t *testing.T, c model.CaseResult) (map[string]float64, bool) {
	t.Helper()
	if _, ok := measured(t, c); !ok {
		return nil, false
	}
	by := map[string][]float64{}
	for _, smp := range c.Samples {
		for k, x := range smp.Values {
			by[k] = append(by[k], x)
		}
	}
	out := map[string]float64{}
	for k, xs := range by {
		out[k] = stats.Median(xs)
	}
	return out, true
}
