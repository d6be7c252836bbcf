package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Iperf3Result is what cnbench takes from an iperf3 client's --json report.
type Iperf3Result struct {
	SentBytes     int64
	ReceivedBytes int64
	// ReceiveTime is the receiver's measured duration.
	ReceiveTime time.Duration
	Retransmits int64
	// HasRetransmits is false for UDP and where iperf3 could not read them.
	HasRetransmits bool
	// MSS is the maximum segment size iperf3 read from its control
	// connection (tcp_mss_default), 0 where it did not say.
	MSS int64
	// UDP only.
	LostPackets int64
	Packets     int64
	LostPercent float64
	JitterMS    float64
	// Intervals are the sender's per-interval byte counts.
	Intervals []Iperf3Interval
	// FlowBPS is each TCP stream's throughput as its receiver measured it,
	// where there was more than one stream.
	FlowBPS []float64
}

// Iperf3Interval is one reporting interval.
type Iperf3Interval struct {
	Start, End float64 // seconds from the start
	Bytes      int64
}

type iperf3Sum struct {
	Start       float64  `json:"start"`
	End         float64  `json:"end"`
	Seconds     float64  `json:"seconds"`
	Bytes       int64    `json:"bytes"`
	Retransmits *int64   `json:"retransmits"`
	JitterMS    *float64 `json:"jitter_ms"`
	LostPackets int64    `json:"lost_packets"`
	Packets     int64    `json:"packets"`
	LostPercent float64  `json:"lost_percent"`
}

// iperf3Stream is one stream's part of the end summary.
type iperf3Stream struct {
	Receiver *iperf3Sum `json:"receiver"` // TCP
}

type iperf3Report struct {
	Error string `json:"error"`
	Start struct {
		TCPMSSDefault int64 `json:"tcp_mss_default"`
	} `json:"start"`
	Intervals []struct {
		Sum iperf3Sum `json:"sum"`
	} `json:"intervals"`
	End struct {
		SumSent     *iperf3Sum     `json:"sum_sent"`
		SumReceived *iperf3Sum     `json:"sum_received"`
		Sum         *iperf3Sum     `json:"sum"` // UDP
		Streams     []iperf3Stream `json:"streams"`
	} `json:"end"`
}

// ParseIperf3 reads an iperf3 client's JSON report (iperf3 -c ... --json).
func ParseIperf3(data []byte) (Iperf3Result, error) {
	var rep iperf3Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return Iperf3Result{}, fmt.Errorf("parse iperf3 json: %w", err)
	}
	if rep.Error != "" {
		return Iperf3Result{}, fmt.Errorf("iperf3: %s", rep.Error)
	}
	var r Iperf3Result
	e := rep.End
	switch {
	case e.Sum != nil && e.Sum.JitterMS != nil: // UDP
		// Newer iperf3 adds the receiver's own sum; older ones fold the
		// receiver's loss and jitter into the single sum.
		recv := e.Sum
		if e.SumReceived != nil {
			recv = e.SumReceived
		}
		r.SentBytes = e.Sum.Bytes
		r.Packets, r.LostPackets, r.LostPercent = recv.Packets, recv.LostPackets, recv.LostPercent
		r.ReceivedBytes = recv.Bytes
		if e.SumReceived == nil && recv.Packets > 0 {
			r.ReceivedBytes = recv.Bytes * (recv.Packets - recv.LostPackets) / recv.Packets
		}
		r.ReceiveTime = seconds(recv.Seconds)
		if recv.JitterMS != nil {
			r.JitterMS = *recv.JitterMS
		}
	case e.SumSent != nil && e.SumReceived != nil: // TCP
		r.SentBytes = e.SumSent.Bytes
		r.ReceivedBytes = e.SumReceived.Bytes
		r.ReceiveTime = seconds(e.SumReceived.Seconds)
		if e.SumSent.Retransmits != nil {
			r.Retransmits, r.HasRetransmits = *e.SumSent.Retransmits, true
		}
		r.MSS = rep.Start.TCPMSSDefault
		r.FlowBPS = flowRates(e.Streams)
	default:
		return Iperf3Result{}, errors.New("parse iperf3 json: no end summary (did the test run?)")
	}
	if r.ReceiveTime <= 0 {
		return Iperf3Result{}, errors.New("parse iperf3 json: the receiver's duration is zero")
	}
	for _, iv := range rep.Intervals {
		r.Intervals = append(r.Intervals, Iperf3Interval{Start: iv.Sum.Start, End: iv.Sum.End, Bytes: iv.Sum.Bytes})
	}
	return r, nil
}

// flowRates are the streams' receiving rates in bit/s; nil for one
// stream, or where a stream's receiver gave no duration.
func flowRates(streams []iperf3Stream) []float64 {
	if len(streams) < 2 {
		return nil
	}
	rates := make([]float64, 0, len(streams))
	for _, s := range streams {
		if s.Receiver == nil || s.Receiver.Seconds <= 0 {
			return nil
		}
		rates = append(rates, float64(s.Receiver.Bytes)*8/s.Receiver.Seconds)
	}
	return rates
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
