// Package measure turns what a traffic engine observed in one exchange,
// and the readings of CPU time and kernel counters taken around it, into
// a sample: the figures of the case's workload, with their units, CPU
// cost on both sides and the hypervisor's steal.
package measure

import (
	"context"
	"time"

	"cnbench/internal/engine"
	"cnbench/internal/model"
)

// Exchanger runs a case's workload once; drivers are exchangers.
type Exchanger interface {
	Exchange(ctx context.Context, c model.Case, d time.Duration) (Exchange, error)
}

// Preparer is an exchanger that can ready an exchange (connect its flows,
// start their threads) before the readings that frame it, so that the
// sample's CPU time is that of the traffic.
type Preparer interface {
	Prepare(ctx context.Context, c model.Case, d time.Duration) error
}

// Gatherer is an exchanger whose results come in part from the far side
// once the traffic has ended: a server's account of what it received.
// Traffic runs the traffic and returns what gathers those results; Take
// reads the path in between, so that the gathering (at 64 endpoints, a
// round trip to each server on an overloaded machine) is not charged to
// the bytes.
type Gatherer interface {
	Traffic(ctx context.Context, c model.Case, d time.Duration) (gather func(context.Context) (Exchange, error), err error)
}

// Exchange is what an engine observed in one run of a workload, whatever
// the workload: one record for all. Zero fields were not observed.
type Exchange struct {
	// Streams: bytes the sender wrote and the receiver read, and the
	// receiver's time from first to last byte.
	SentBytes, ReceivedBytes int64
	ReceiveTime              time.Duration
	Intervals                []model.Interval
	// Request/response: completed transactions in TxTime, and their
	// latency as an HDR histogram (compressed V2 encoding, nanoseconds).
	Transactions int64
	TxTime       time.Duration
	// CPUTransactions, when set, are the transactions the processes'
	// whole CPU time paid for, where the tool measured only some of them
	// (sockperf drops its warm-up).
	CPUTransactions int64
	// ActiveTime, when set, is how long traffic flowed, where the tool
	// idled for a noticeable part of the sample (sockperf waits 2 s
	// before it starts). The processes' CPU and softirq percentages are
	// over this time, so that they compare with those of an engine that
	// was busy throughout; steal, the hypervisor's, is over the sample.
	ActiveTime time.Duration
	LatencyHDR []byte
	// LatencyUS are latency percentiles in microseconds, for engines
	// that report them without a histogram.
	LatencyUS map[string]float64
	// Retransmits, when RetransmitsKnown.
	Retransmits      int64
	RetransmitsKnown bool
	// RetransmittedBytes is the payload they carried, when the engine
	// knows it (RetransmittedBytesKnown): the wire counted those bytes
	// twice where the first copy was dropped after the count.
	RetransmittedBytes      int64
	RetransmittedBytesKnown bool

	// PerEndpoint is each client endpoint's throughput (streams) or
	// transactions per second (the others) where a pattern placed
	// several, or the case named one; nil otherwise, and for ping.
	// TxPerS is their sum; ThroughputBPS is every byte received over the
	// time from the first byte sent (or received) to the last received
	// (ReceiveTime), or, where the engines cannot tell that, their sum.
	PerEndpoint           []float64
	ThroughputBPS, TxPerS float64
	// PerFlow is each flow's throughput over its session's receive time,
	// every flow of every endpoint, for streams whose engine tells the
	// flows apart; nil otherwise.
	PerFlow []float64
	// UDP: datagrams (udp_stream) or requests (udp_rr) sent, received,
	// lost and reordered, and the mean RFC 3550 jitter over flows.
	SentPackets, ReceivedPackets, Lost, OutOfOrder int64
	JitterNS                                       float64
	// NoJitter says the engine measured neither jitter nor order, as a
	// sender-only tool does not.
	NoJitter bool
	// Tried and Unanswered: udp_rr's and ping's tries, and those that got
	// no answer.
	Tried, Unanswered int64
	// RTT are ping's round trips, ns.
	RTT *engine.RTTStats
	// MaxRateBPS is udp_max_rate's highest aggregate offered rate that
	// passed, after Trials trials.
	MaxRateBPS float64
	Trials     int
}

// transactionsForCPU are the transactions to charge the exchange's CPU
// time to.
func (x Exchange) transactionsForCPU() int64 {
	if x.CPUTransactions > 0 {
		return x.CPUTransactions
	}
	return x.Transactions
}

// busyTime is the time to spread the sample's CPU time over: the time
// traffic flowed, where the exchange knows it, else the whole sample.
func (x Exchange) busyTime(wall time.Duration) time.Duration {
	if x.ActiveTime > 0 && x.ActiveTime < wall {
		return x.ActiveTime
	}
	return wall
}

// CountRetransmits records an external engine's retransmitted segments,
// and their payload where it also said the connection's MSS: a bulk
// stream's retransmits are full segments.
func (x *Exchange) CountRetransmits(segments int64, known bool, mss int64) {
	if !known {
		return
	}
	x.Retransmits, x.RetransmitsKnown = segments, true
	if mss > 0 {
		x.RetransmittedBytes, x.RetransmittedBytesKnown = segments*mss, true
	}
}
