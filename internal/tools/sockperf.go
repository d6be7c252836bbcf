package tools

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"cnbench/internal/excerpt"
)

// SockperfPingPong is what cnbench takes from `sockperf ping-pong
// --full-rtt`: full round-trip times, in microseconds.
type SockperfPingPong struct {
	// ValidTime is the measured part of the run, after sockperf's own
	// warm-up; Transactions completed in it.
	ValidTime    time.Duration
	Transactions int64
	// RunTime is the whole run, warm-up included: the time traffic
	// flowed, which is shorter than the client lived, since it waits
	// about 2 s before its warm-up.
	RunTime time.Duration
	// AllTransactions completed in the whole run, warm-up included: the
	// work the processes' CPU time paid for.
	AllTransactions int64
	AvgRTTUS        float64
	StddevUS        float64
	MinUS, MaxUS    float64
	// PercentilesUS maps a percentile (50, 90, 99, 99.9, ...) to its RTT.
	PercentilesUS map[float64]float64
}

var (
	ansiEscape    = regexp.MustCompile(`\x1b\[[0-9;]*m`)
	totalRun      = regexp.MustCompile(`\[Total Run\] RunTime=([0-9.]+) sec; Warm up time=\d+ msec; SentMessages=\d+; ReceivedMessages=(\d+)`)
	validDuration = regexp.MustCompile(`\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)`)
	avgRTT        = regexp.MustCompile(`avg-(?:rtt|latency)=([0-9.]+) \(std-dev=([0-9.]+)\)`)
	percentile    = regexp.MustCompile(`---> percentile ([0-9.]+) =\s*([0-9.]+)`)
	extreme       = regexp.MustCompile(`---> <(MAX|MIN)> observation =\s*([0-9.]+)`)
	bandwidth     = regexp.MustCompile(`BandWidth is [0-9.]+ MBps \(([0-9.]+) Mbps\)`)
	messagesSent  = regexp.MustCompile(`Total of (\d+) messages sent in ([0-9.]+) sec`)
)

// ParseSockperfPingPong reads the text a sockperf ping-pong client prints.
// Without --full-rtt sockperf halves the round trip; cnbench always asks
// for full round trips, and refuses output that lacks them.
func ParseSockperfPingPong(out []byte) (SockperfPingPong, error) {
	r := SockperfPingPong{PercentilesUS: map[float64]float64{}}
	text := ansiEscape.ReplaceAll(out, nil)
	if !bytes.Contains(text, []byte("avg-rtt=")) {
		if bytes.Contains(text, []byte("avg-latency=")) {
			return r, errors.New("parse sockperf: output holds one-way latencies; run ping-pong with --full-rtt")
		}
		return r, fmt.Errorf("parse sockperf: no round-trip summary in %q", tail(text))
	}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if m := validDuration.FindStringSubmatch(line); m != nil {
			secs, _ := strconv.ParseFloat(m[1], 64)
			r.ValidTime = seconds(secs)
			r.Transactions, _ = strconv.ParseInt(m[3], 10, 64)
		}
		if m := totalRun.FindStringSubmatch(line); m != nil {
			secs, _ := strconv.ParseFloat(m[1], 64)
			r.RunTime = seconds(secs)
			r.AllTransactions, _ = strconv.ParseInt(m[2], 10, 64)
		}
		if m := avgRTT.FindStringSubmatch(line); m != nil {
			r.AvgRTTUS, _ = strconv.ParseFloat(m[1], 64)
			r.StddevUS, _ = strconv.ParseFloat(m[2], 64)
		}
		if m := percentile.FindStringSubmatch(line); m != nil {
			p, _ := strconv.ParseFloat(m[1], 64)
			v, _ := strconv.ParseFloat(m[2], 64)
			r.PercentilesUS[p] = v
		}
		if m := extreme.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			if m[1] == "MAX" {
				r.MaxUS = v
			} else {
				r.MinUS = v
			}
		}
	}
	if r.ValidTime <= 0 || r.Transactions <= 0 {
		return r, fmt.Errorf("parse sockperf: no valid-duration line with messages in %q", tail(text))
	}
	return r, nil
}

// SockperfThroughput is what cnbench takes from `sockperf throughput`: the
// sender's account only; sockperf does not report what arrived.
type SockperfThroughput struct {
	Messages int64
	Time     time.Duration
	Mbps     float64
}

// ParseSockperfThroughput reads the text a sockperf throughput client prints.
func ParseSockperfThroughput(out []byte) (SockperfThroughput, error) {
	text := ansiEscape.ReplaceAll(out, nil)
	var r SockperfThroughput
	m := messagesSent.FindSubmatch(text)
	b := bandwidth.FindSubmatch(text)
	if m == nil || b == nil {
		return r, fmt.Errorf("parse sockperf: no throughput summary in %q", tail(text))
	}
	r.Messages, _ = strconv.ParseInt(string(m[1]), 10, 64)
	secs, _ := strconv.ParseFloat(string(m[2]), 64)
	r.Time = seconds(secs)
	r.Mbps, _ = strconv.ParseFloat(string(b[1]), 64)
	return r, nil
}

// tail is the end of a tool's output, for error messages.
func tail(text []byte) string { return excerpt.Tail(string(text), 300) }
