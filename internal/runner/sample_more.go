package runner

import (
	"fmt"

	"cnbench/internal/model"
)

// moreValues fills a sample of the workloads beyond tcp_stream and tcp_rr.
func moreValues(c model.Case, s *model.Sample, x exchange, before, after cpuReading, bothCPU float64) error {
	v, m := s.Values, x.more
	if m == nil {
		return fmt.Errorf("measure: workload %q has no measurement", c.Workload)
	}
	switch c.Workload {
	case "udp_stream", "udp_max_rate":
		if m.sentPackets <= 0 {
			return fmt.Errorf("measure: the sender sent no datagram")
		}
		v[model.ThroughputBPS] = m.throughputBPS
		v[model.SentPackets] = float64(m.sentPackets)
		v[model.ReceivedPackets] = float64(m.receivedPackets)
		v[model.LossPct] = 100 * float64(m.lost) / float64(m.sentPackets)
		if !m.noJitter {
			v[model.OutOfOrder] = float64(m.outOfOrder)
			v[model.JitterUS] = m.jitterNS / 1e3
		}
		if x.sentBytes > 0 {
			v[model.SentBytes] = float64(x.sentBytes)
		}
		v[model.ReceivedBytes] = float64(x.receivedBytes)
		// The kernel's counters span the whole exchange, which for
		// udp_max_rate is every trial, not the one the sample reports.
		if c.Workload == "udp_stream" {
			wire := after.wire.Sub(before.wire)
			v[model.WireRxBytes] = float64(wire.RxBytes)
			v[model.WireRxPackets] = float64(wire.RxPackets)
			v[model.UDPRcvbufErrors] = float64(after.udp.Sub(before.udp).RcvbufErrors)
		}
		if c.Workload == "udp_max_rate" {
			v[model.MaxRateBPS] = m.maxRateBPS
			v[model.Trials] = float64(m.trials)
		} else if x.receivedBytes > 0 {
			v[model.CPUSPerGB] = bothCPU / (float64(x.receivedBytes) / 1e9)
		}
	case "udp_rr", "tcp_crr", "ping":
		if x.transactions <= 0 || x.txTime <= 0 {
			return fmt.Errorf("measure: %d transactions in %v", x.transactions, x.txTime)
		}
		switch c.Workload {
		case "tcp_crr":
			v[model.ConnectionsPerS] = m.txPerS
			v[model.TransactionsPerS] = m.txPerS
		case "udp_rr":
			v[model.TransactionsPerS] = m.txPerS
		}
		if m.tried > 0 {
			v[model.LossPct] = 100 * float64(m.unanswered) / float64(m.tried)
			v[model.SentPackets] = float64(m.tried)
			v[model.ReceivedPackets] = float64(m.tried - m.unanswered)
		}
		if c.Workload != "ping" {
			v[model.CPUUSPerTx] = bothCPU * 1e6 / float64(x.transactionsForCPU())
		}
		if r := m.rtt; r != nil {
			v[model.RTTMinUS], v[model.RTTAvgUS], v[model.RTTMaxUS], v[model.RTTMdevUS] = r.Min/1e3, r.Avg/1e3, r.Max/1e3, r.Mdev/1e3
		}
		if err := latencyValues(v, x); err != nil {
			return err
		}
		s.Latency = x.latencyHDR
	default:
		return fmt.Errorf("measure: workload %q has no measurement", c.Workload)
	}
	return nil
}

// patternValues adds what a pattern of several client endpoints
// measured: the aggregate over them, each one's mean share, and how
// evenly they shared (Jain's fairness index).
func patternValues(v map[string]float64, x exchange) {
	m := x.more
	if m == nil || len(m.perEndpoint) == 0 {
		return
	}
	if m.throughputBPS > 0 {
		v[model.ThroughputBPS] = m.throughputBPS
		v[model.ThroughputPerEndpointBPS] = m.throughputBPS / float64(len(m.perEndpoint))
	} else if m.txPerS > 0 {
		v[model.TransactionsPerS] = m.txPerS
	}
	if len(m.perEndpoint) > 1 {
		v[model.FairnessJain] = jain(m.perEndpoint)
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
