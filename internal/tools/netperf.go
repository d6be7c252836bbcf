package tools

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// NetperfKeys are the omni output selectors cnbench asks netperf for
// (`-- -k` with these), whatever the test: each test fills those that
// apply to it and prints the others empty or negative. The latency
// statistics need netperf's global -j.
var NetperfKeys = []string{
	"ELAPSED_TIME", "THROUGHPUT", "THROUGHPUT_UNITS",
	"LOCAL_BYTES_SENT", "REMOTE_BYTES_RECVD", "LOCAL_SEND_CALLS", "REMOTE_RECV_CALLS",
	"LOCAL_TRANSPORT_RETRANS", "TRANSPORT_MSS",
	"TRANSACTION_RATE", "MEAN_LATENCY", "MIN_LATENCY", "MAX_LATENCY",
	"P50_LATENCY", "P90_LATENCY", "P99_LATENCY", "STDDEV_LATENCY",
}

// NetperfResult is what cnbench takes from one netperf run's keyval
// output. Fields a test does not fill stay zero.
type NetperfResult struct {
	// Elapsed is the test's measured time, which netperf prints to
	// 10 ms only.
	Elapsed time.Duration
	// Streams: bytes the sender wrote and the receiver read, the
	// sender's retransmissions where the kernel reported them, and the
	// throughput netperf computed from the receiver's bytes over the
	// precise elapsed time, in bit/s.
	SentBytes, ReceivedBytes int64
	ThroughputBPS            float64
	Retransmits              int64
	HasRetransmits           bool
	// MSS is the connection's maximum segment size (TRANSPORT_MSS), 0
	// where netperf did not say.
	MSS int64
	// SendCalls and ReceiveCalls are the sender's send calls and the
	// receiver's receive calls: for UDP_STREAM, the datagrams sent and
	// those that arrived.
	SendCalls, ReceiveCalls int64
	// Request/response and connect/request/response: transactions per
	// second, and their round trips in microseconds.
	TransactionRate float64
	MeanUS, MinUS   float64
	MaxUS, StddevUS float64
	// PercentilesUS maps 50, 90 and 99 to their round trip.
	PercentilesUS map[float64]float64
}

// Transactions is how many transactions the run completed.
func (r NetperfResult) Transactions() int64 {
	return int64(r.TransactionRate*r.Elapsed.Seconds() + 0.5)
}

// ParseNetperf reads the output of `netperf -P 0 -j ... -- -k KEYS`: one
// KEY=VALUE line per selector. It needs at least the elapsed time and,
// for streams, the receiver's byte count or, for the others, the
// transaction rate; netperf's own complaints, which it prints instead,
// come back as the error.
func ParseNetperf(out []byte) (NetperfResult, error) {
	r := NetperfResult{PercentilesUS: map[float64]float64{}}
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if ok && k != "" && strings.ToUpper(k) == k && !strings.ContainsAny(k, " \t") {
			kv[k] = strings.TrimSpace(v)
		}
	}
	num := func(key string) (float64, bool) {
		v, err := strconv.ParseFloat(kv[key], 64)
		return v, err == nil
	}
	elapsed, ok := num("ELAPSED_TIME")
	if !ok || elapsed <= 0 {
		return r, fmt.Errorf("parse netperf: no elapsed time in %q", tail(out))
	}
	r.Elapsed = time.Duration(elapsed * float64(time.Second))
	if v, ok := num("LOCAL_BYTES_SENT"); ok && v > 0 {
		r.SentBytes = int64(v)
	}
	if v, ok := num("REMOTE_BYTES_RECVD"); ok && v > 0 {
		r.ReceivedBytes = int64(v)
	}
	// netperf prints -1 where the kernel did not say.
	if v, ok := num("LOCAL_TRANSPORT_RETRANS"); ok && v >= 0 {
		r.Retransmits, r.HasRetransmits = int64(v), true
	}
	if v, ok := num("TRANSPORT_MSS"); ok && v > 0 {
		r.MSS = int64(v)
	}
	if v, ok := num("LOCAL_SEND_CALLS"); ok && v > 0 {
		r.SendCalls = int64(v)
	}
	if v, ok := num("REMOTE_RECV_CALLS"); ok && v > 0 {
		r.ReceiveCalls = int64(v)
	}
	if bps, ok := bitsPerSecond(kv["THROUGHPUT"], kv["THROUGHPUT_UNITS"]); ok {
		r.ThroughputBPS = bps
	}
	if v, ok := num("TRANSACTION_RATE"); ok && v > 0 {
		r.TransactionRate = v
	}
	r.MeanUS, _ = num("MEAN_LATENCY")
	r.MinUS, _ = num("MIN_LATENCY")
	r.MaxUS, _ = num("MAX_LATENCY")
	r.StddevUS, _ = num("STDDEV_LATENCY")
	for key, q := range map[string]float64{"P50_LATENCY": 50, "P90_LATENCY": 90, "P99_LATENCY": 99} {
		if v, ok := num(key); ok && v > 0 {
			r.PercentilesUS[q] = v
		}
	}
	if r.ReceivedBytes == 0 && r.TransactionRate == 0 {
		return r, fmt.Errorf("parse netperf: neither bytes received nor transactions in %q", tail(out))
	}
	return r, nil
}

// bitsPerSecond reads a netperf throughput in its units "10^N bits/s",
// which a stream test reports unless asked for bytes.
func bitsPerSecond(value, units string) (float64, bool) {
	exp, ok := strings.CutPrefix(units, "10^")
	if !ok {
		return 0, false
	}
	exp, ok = strings.CutSuffix(exp, "bits/s")
	if !ok {
		return 0, false
	}
	n, err1 := strconv.Atoi(exp)
	v, err2 := strconv.ParseFloat(value, 64)
	if err1 != nil || err2 != nil || v <= 0 {
		return 0, false
	}
	return v * math.Pow10(n), true
}
