package measure

import (
	"fmt"
	"math"
	"slices"

	"cnbench/internal/model"
	"cnbench/internal/workload"
)

// shapeValues fills a sample with the figures of its workload's shape
// and transport, read from the workload's row: any workload of a known
// shape is measured with no code of its own here.
func shapeValues(c model.Case, s *model.Sample, x Exchange, before, after reading, bothCPU float64) error {
	row, ok := workload.Lookup(c.Workload)
	if !ok {
		return fmt.Errorf("measure: workload %q has no measurement", c.Workload)
	}
	switch {
	case row.Shape == workload.Stream && row.Transport == workload.TCP:
		return tcpStreamValues(s.Values, x, before, after, bothCPU, model.FamilyHas6(c.Params.Family))
	case row.Shape == workload.Stream || row.Shape == workload.MaxRateSearch:
		return datagramValues(row, s.Values, x, before, after, bothCPU)
	case row.Shape == workload.RequestResponse && row.Transport == workload.TCP:
		if x.Transactions <= 0 || x.TxTime <= 0 {
			return fmt.Errorf("measure: %d transactions in %v", x.Transactions, x.TxTime)
		}
		s.Values[model.TransactionsPerS] = float64(x.Transactions) / x.TxTime.Seconds()
		s.Values[model.CPUUSPerTx] = bothCPU * 1e6 / float64(x.transactionsForCPU())
		s.Latency = x.LatencyHDR
		return latencyValues(s.Values, x)
	default:
		if row.Shape == workload.RequestResponse && row.Transport == workload.UDP {
			udpKernelValues(s.Values, x, before, after)
		}
		return transactionValues(row, s, x, bothCPU)
	}
}

// udpKernelValues are the kernel's account of UDP request/response: the
// datagrams its servers' namespaces delivered to sockets and dropped for
// a full buffer, and from them the requests lost on the way, for an
// engine that says how many it sent. Where a client shares a server's
// namespace its counters hold the responses too, and half of what they
// delivered is taken for the requests.
func udpKernelValues(v map[string]float64, x Exchange, before, after reading) {
	d := after.udp.Sub(before.udp)
	if !before.local || !after.local {
		return // a guest's or an agent's counters are not read
	}
	v[model.UDPInDatagrams] = float64(d.InDatagrams)
	v[model.UDPRcvbufErrors] = float64(d.RcvbufErrors)
	if x.Tried <= 0 {
		return
	}
	requests := float64(d.InDatagrams)
	if after.shared {
		requests /= 2
	}
	v[model.UDPKernelLossPct] = 100 * (1 - requests/float64(x.Tried))
}

// tcpStreamValues are a TCP stream's figures, held against the bytes
// the receiver's interfaces counted; v6 says the stream ran over IPv6.
func tcpStreamValues(v map[string]float64, x Exchange, before, after reading, bothCPU float64, v6 bool) error {
	if x.ReceiveTime <= 0 || x.ReceivedBytes <= 0 {
		return fmt.Errorf("measure: the receiver got %d bytes in %v", x.ReceivedBytes, x.ReceiveTime)
	}
	v[model.ThroughputBPS] = float64(x.ReceivedBytes) * 8 / x.ReceiveTime.Seconds()
	if x.SentBytes > 0 {
		v[model.SentBytes] = float64(x.SentBytes)
	}
	v[model.ReceivedBytes] = float64(x.ReceivedBytes)
	v[model.CPUSPerGB] = bothCPU / (float64(x.ReceivedBytes) / 1e9)
	wire := after.wire.Sub(before.wire)
	v[model.WireRxBytes] = float64(wire.RxBytes)
	v[model.WireRxPackets] = float64(wire.RxPackets)
	var retransmitted float64
	if x.RetransmittedBytesKnown {
		retransmitted = float64(x.RetransmittedBytes)
	}
	if payload := wirePayload(wire, v6); payload > 0 {
		v[model.AppWireRatio] = appWireRatio(float64(x.ReceivedBytes), payload, retransmitted)
	}
	return nil
}

// appWireRatio holds the bytes an engine received to the payload the
// receiver's interfaces counted, of which retransmitted were sent again.
// Every byte delivered crossed those interfaces at least once, and a
// retransmitted one twice where its first copy was dropped after the
// count (at the receiver's backlog, on a veth pair) but once where it was
// dropped before (inside OVS's userspace datapath, which retransmitted a
// fifth of a stream's payload): a true count lies between payload less
// retransmitted and payload. It is 1 there, and the received bytes over
// the nearer bound outside.
func appWireRatio(received, payload, retransmitted float64) float64 {
	switch low := payload - retransmitted; {
	case received > payload:
		return received / payload
	case received < low:
		return received / low
	}
	return 1
}

// datagramValues are a datagram stream's figures, or those of the rate
// search that ran such streams.
func datagramValues(row workload.Row, v map[string]float64, x Exchange, before, after reading, bothCPU float64) error {
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
	if row.Shape == workload.MaxRateSearch {
		// The kernel's counters span the whole exchange, which for a
		// search is every trial, not the one the sample reports.
		v[model.MaxRateBPS] = x.MaxRateBPS
		v[model.Trials] = float64(x.Trials)
		return nil
	}
	wire := after.wire.Sub(before.wire)
	v[model.WireRxBytes] = float64(wire.RxBytes)
	v[model.WireRxPackets] = float64(wire.RxPackets)
	v[model.UDPRcvbufErrors] = float64(after.udp.Sub(before.udp).RcvbufErrors)
	if x.ReceivedBytes > 0 {
		v[model.CPUSPerGB] = bothCPU / (float64(x.ReceivedBytes) / 1e9)
	}
	return nil
}

// transactionValues are the figures of transactions that may go
// unanswered (datagrams, echoes) or open a connection each.
func transactionValues(row workload.Row, s *model.Sample, x Exchange, bothCPU float64) error {
	v := s.Values
	if x.Transactions <= 0 || x.TxTime <= 0 {
		return fmt.Errorf("measure: %d transactions in %v", x.Transactions, x.TxTime)
	}
	switch row.Shape {
	case workload.ConnectRequestResponse:
		v[model.ConnectionsPerS] = x.TxPerS
		v[model.TransactionsPerS] = x.TxPerS
	case workload.RequestResponse:
		v[model.TransactionsPerS] = x.TxPerS
	}
	if x.Tried > 0 {
		v[model.LossPct] = 100 * float64(x.Unanswered) / float64(x.Tried)
		v[model.SentPackets] = float64(x.Tried)
		v[model.ReceivedPackets] = float64(x.Tried - x.Unanswered)
	}
	if row.Shape != workload.Echo {
		v[model.CPUUSPerTx] = bothCPU * 1e6 / float64(x.transactionsForCPU())
	}
	if r := x.RTT; r != nil {
		v[model.RTTMinUS], v[model.RTTAvgUS], v[model.RTTMaxUS], v[model.RTTMdevUS] = r.Min/1e3, r.Avg/1e3, r.Max/1e3, r.Mdev/1e3
	}
	s.Latency = x.LatencyHDR
	return latencyValues(v, x)
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

// flowValues add how a stream's throughput spread over its flows, where
// it had more than one.
func flowValues(v map[string]float64, x Exchange) {
	if len(x.PerFlow) < 2 {
		return
	}
	rates := slices.Clone(x.PerFlow)
	slices.Sort(rates)
	n := len(rates)
	v[model.FlowThroughputMinBPS] = rates[0]
	v[model.FlowThroughputP10BPS] = nearestRank(rates, 0.10)
	v[model.FlowThroughputP90BPS] = nearestRank(rates, 0.90)
	v[model.FlowThroughputMaxBPS] = rates[n-1]
	if n%2 == 1 {
		v[model.FlowThroughputMedianBPS] = rates[n/2]
	} else {
		v[model.FlowThroughputMedianBPS] = (rates[n/2-1] + rates[n/2]) / 2
	}
	v[model.FlowFairnessJain] = jain(rates)
}

// nearestRank is the p-quantile of sorted by the nearest-rank rule: the
// smallest value with at least p of the values at or below it.
func nearestRank(sorted []float64, p float64) float64 {
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[min(len(sorted), max(1, rank))-1]
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
