package measure

import (
	"fmt"

	"cnbench/internal/model"
)

// workloadValues fills a sample of the workloads beyond tcp_stream and tcp_rr.
func workloadValues(c model.Case, s *model.Sample, x Exchange, before, after reading, bothCPU float64) error {
	v := s.Values
	switch c.Workload {
	case "udp_stream", "udp_max_rate":
		if x.SentPackets <= 0 {
			return fmt.Errorf("measure: the sender sent no datagram")
		}
		v[model.ThroughputBPS] = x.ThroughputBPS
		v[model.SentPackets] = float64(x.SentPackets)
		v[model.ReceivedPackets] = float64(x.ReceivedPackets)
		v[model.LossPct] = 100 * float64(x.Lost) / float64(x.SentPackets)
		if !x.NoJitter {
			v[model.OutOfOrder] = float64(x.OutOfOrder)
			v[model.JitterUS] = x.JitterNS / 1e3
		}
		if x.SentBytes > 0 {
			v[model.SentBytes] = float64(x.SentBytes)
		}
		v[model.ReceivedBytes] = float64(x.ReceivedBytes)
		// The kernel's counters span the whole exchange, which for
		// udp_max_rate is every trial, not the one the sample reports.
		if c.Workload == "udp_stream" {
			wire := after.wire.Sub(before.wire)
			v[model.WireRxBytes] = float64(wire.RxBytes)
			v[model.WireRxPackets] = float64(wire.RxPackets)
			v[model.UDPRcvbufErrors] = float64(after.udp.Sub(before.udp).RcvbufErrors)
		}
		if c.Workload == "udp_max_rate" {
			v[model.MaxRateBPS] = x.MaxRateBPS
			v[model.Trials] = float64(x.Trials)
		} else if x.ReceivedBytes > 0 {
			v[model.CPUSPerGB] = bothCPU / (float64(x.ReceivedBytes) / 1e9)
		}
	case "udp_rr", "tcp_crr", "ping":
		if x.Transactions <= 0 || x.TxTime <= 0 {
			return fmt.Errorf("measure: %d transactions in %v", x.Transactions, x.TxTime)
		}
		switch c.Workload {
		case "tcp_crr":
			v[model.ConnectionsPerS] = x.TxPerS
			v[model.TransactionsPerS] = x.TxPerS
		case "udp_rr":
			v[model.TransactionsPerS] = x.TxPerS
		}
		if x.Tried > 0 {
			v[model.LossPct] = 100 * float64(x.Unanswered) / float64(x.Tried)
			v[model.SentPackets] = float64(x.Tried)
			v[model.ReceivedPackets] = float64(x.Tried - x.Unanswered)
		}
		if c.Workload != "ping" {
			v[model.CPUUSPerTx] = bothCPU * 1e6 / float64(x.transactionsForCPU())
		}
		if r := x.RTT; r != nil {
			v[model.RTTMinUS], v[model.RTTAvgUS], v[model.RTTMaxUS], v[model.RTTMdevUS] = r.Min/1e3, r.Avg/1e3, r.Max/1e3, r.Mdev/1e3
		}
		if err := latencyValues(v, x); err != nil {
			return err
		}
		s.Latency = x.LatencyHDR
	default:
		return fmt.Errorf("measure: workload %q has no measurement", c.Workload)
	}
	return nil
}

// patternValues adds what a pattern of several client endpoints
// measured: the aggregate over them, each one's mean share, and how
// evenly they shared (Jain's fairness index).
func patternValues(v map[string]float64, x Exchange) {
	if len(x.PerEndpoint) == 0 {
		return
	}
	if x.ThroughputBPS > 0 {
		v[model.ThroughputBPS] = x.ThroughputBPS
		v[model.ThroughputPerEndpointBPS] = x.ThroughputBPS / float64(len(x.PerEndpoint))
	} else if x.TxPerS > 0 {
		v[model.TransactionsPerS] = x.TxPerS
	}
	if len(x.PerEndpoint) > 1 {
		v[model.FairnessJain] = jain(x.PerEndpoint)
	}
}

// jain is Jain's fairness index: (Σx)² / (n·Σx²), 1 when all are equal
// and 1/n when one endpoint gets everything.
func jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}
