// Package workload holds one table row per workload: what traffic it sends
// (transport and shape), the scenario keys it takes, their defaults and
// bounds, the metric a table leads with, and the external engines that run
// it.
//
// It exists so that a workload's facts are written once. The scenario
// parser, the native engine, the runner and the reports read the row
// instead of guessing a kind from the name's suffix, so adding a workload
// is one row here plus the code of the engines that run it.
package workload

import (
	"slices"
	"time"

	"cnbench/internal/model"
)

// Workload names.
const (
	TCPStream  = "tcp_stream"
	TCPRR      = "tcp_rr"
	TCPCRR     = "tcp_crr"
	UDPStream  = "udp_stream"
	UDPMaxRate = "udp_max_rate"
	UDPRR      = "udp_rr"
	Ping       = "ping"
)

// Transport is the protocol a workload's traffic rides on.
type Transport int

const (
	TCP Transport = iota + 1
	UDP
	ICMP
)

// Shape is how a workload's traffic flows.
type Shape int

const (
	// Stream sends as fast as it can (or at an offered rate) one way.
	Stream Shape = iota + 1
	// RequestResponse sends a request and waits for its response, one
	// transaction at a time per flow.
	RequestResponse
	// ConnectRequestResponse opens a connection per transaction.
	ConnectRequestResponse
	// MaxRateSearch runs streams at offered rates, searching for the
	// highest whose loss stays under a threshold.
	MaxRateSearch
	// Echo sends ICMP echo requests at an interval.
	Echo
)

// Bounds shared by several rows; the engine's protocol checks the same.
const (
	// MaxMessageSize bounds a TCP write, request or response.
	MaxMessageSize = 64 << 20
	// MinDatagram holds the engine's datagram header (sequence number and
	// send time); MaxDatagram is the largest UDP payload over IPv4.
	MinDatagram = 32
	MaxDatagram = 65507
	// MinEchoPayload holds an echo's index and send time; MaxEchoPayload
	// is the largest ICMP echo payload over IPv4.
	MinEchoPayload = 16
	MaxEchoPayload = MaxDatagram - 8
	// MaxEchoCount and MaxEchoInterval bound echoes per sample and the
	// gap between them.
	MaxEchoCount    = 10_000_000
	MaxEchoInterval = time.Minute
	// MaxEngineSockets bounds the data sockets of one engine process: a
	// request/response flow holds a locked OS thread, and the Go runtime
	// aborts the whole process beyond 10000 threads, so an over-large
	// request must fail on its own instead.
	MaxEngineSockets = 4096
)

// SocketsPerFlow is how many of an engine's sockets a flow holds on the
// client (a datagram flow: its UDP socket and its TCP control
// connection) and on the server (one: the listener's UDP socket is
// shared).
func (r Row) SocketsPerFlow() (client, server int) {
	if r.Transport == UDP {
		return 2, 1
	}
	return 1, 1
}

// RoundTrips reports whether the workload times round trips: each
// message waits on the other side's answer, so its threads block and
// wake on every one, and an idle CPU's wake-up time is part of what it
// measures.
func (r Row) RoundTrips() bool {
	switch r.Shape {
	case RequestResponse, ConnectRequestResponse, Echo:
		return true
	}
	return false
}

// The scenario keys a row may list.
const (
	KeyFlows        = "flows"
	KeyMsgSize      = "msg_size"
	KeyRequestSize  = "request_size"
	KeyResponseSize = "response_size"
)

// Row is one workload's facts.
type Row struct {
	Name      string
	Transport Transport
	Shape     Shape
	// Axes are the scenario keys that sweep flows and sizes (Key*), in
	// the order cases are expanded over them and case keys list them.
	Axes []string
	// Knobs are the other scenario keys the workload takes (traffic
	// pattern, offered rate, loss threshold, echo count and interval,
	// socket options), in the order messages list them.
	Knobs    []string
	Defaults Defaults
	Bounds   Bounds
	// PrimaryMetric is the metric a table leads with.
	PrimaryMetric string
	// Engines are the external engines that run the workload; the
	// native engine runs every one.
	Engines []string
}

// Defaults are the values of a workload's keys a scenario leaves out.
type Defaults struct {
	Flows int
	// MsgSize is a stream's write, a datagram's payload or an echo's.
	MsgSize                   int
	RequestSize, ResponseSize int
	// Interval is the gap between echoes.
	Interval time.Duration
	// LossThresholdPct bounds a max-rate search.
	LossThresholdPct float64
}

// Bounds are the values a workload's keys may take.
type Bounds struct {
	// MinSize and MaxSize bound a message, request or response, in bytes.
	MinSize, MaxSize int
	// MaxCount and MaxInterval bound echoes per sample and their gap.
	MaxCount    int
	MaxInterval time.Duration
}

// Takes reports whether the workload takes a scenario key.
func (r Row) Takes(key string) bool {
	return slices.Contains(r.Axes, key) || slices.Contains(r.Knobs, key)
}

// Key lists shared by rows.
var (
	streamAxes = []string{KeyFlows, KeyMsgSize}
	rrAxes     = []string{KeyFlows, KeyRequestSize, KeyResponseSize}
	// patternKnobs (the pattern, its endpoints, and how engine processes
	// serve them) are taken by every workload; socketKnobs by those
	// with sockets, tcpKnobs by TCP ones.
	patternKnobs = []string{"pattern", "clients", "servers", "engines"}
	socketKnobs  = []string{"send_buffer", "receive_buffer"}
	tcpKnobs     = []string{"mss", "cc", "nodelay"}
)

func knobs(lists ...[]string) []string { return slices.Concat(lists...) }

var (
	tcpBounds = Bounds{MinSize: 1, MaxSize: MaxMessageSize}
	udpBounds = Bounds{MinSize: MinDatagram, MaxSize: MaxDatagram}
)

// rows are the workloads, in the order lists and help show them.
var rows = []Row{{
	Name: TCPStream, Transport: TCP, Shape: Stream,
	Axes: streamAxes, Knobs: knobs(patternKnobs, socketKnobs, tcpKnobs),
	Defaults: Defaults{Flows: 1, MsgSize: 128 << 10}, Bounds: tcpBounds,
	PrimaryMetric: model.ThroughputBPS, Engines: []string{"iperf3", "netperf"},
}, {
	Name: TCPRR, Transport: TCP, Shape: RequestResponse,
	Axes: rrAxes, Knobs: knobs(patternKnobs, socketKnobs, tcpKnobs),
	Defaults: Defaults{Flows: 1, RequestSize: 64, ResponseSize: 64}, Bounds: tcpBounds,
	PrimaryMetric: model.TransactionsPerS, Engines: []string{"sockperf", "netperf"},
}, {
	Name: TCPCRR, Transport: TCP, Shape: ConnectRequestResponse,
	Axes: rrAxes, Knobs: knobs(patternKnobs, socketKnobs, tcpKnobs),
	Defaults: Defaults{Flows: 1, RequestSize: 64, ResponseSize: 64}, Bounds: tcpBounds,
	PrimaryMetric: model.ConnectionsPerS, Engines: []string{"netperf"},
}, {
	Name: UDPStream, Transport: UDP, Shape: Stream,
	Axes: streamAxes, Knobs: knobs(patternKnobs, []string{"rate"}, socketKnobs),
	// 1472 bytes is the largest datagram one 1500-byte frame holds.
	Defaults: Defaults{Flows: 1, MsgSize: 1472}, Bounds: udpBounds,
	PrimaryMetric: model.ThroughputBPS, Engines: []string{"iperf3", "sockperf", "netperf"},
}, {
	Name: UDPMaxRate, Transport: UDP, Shape: MaxRateSearch,
	Axes: streamAxes, Knobs: knobs(patternKnobs, []string{"loss_threshold"}, socketKnobs),
	// 3% is study 000's loss bound for UDP.
	Defaults: Defaults{Flows: 1, MsgSize: 1472, LossThresholdPct: 3}, Bounds: udpBounds,
	PrimaryMetric: model.MaxRateBPS,
}, {
	Name: UDPRR, Transport: UDP, Shape: RequestResponse,
	Axes: rrAxes, Knobs: knobs(patternKnobs, socketKnobs),
	Defaults: Defaults{Flows: 1, RequestSize: 64, ResponseSize: 64}, Bounds: udpBounds,
	PrimaryMetric: model.TransactionsPerS, Engines: []string{"sockperf", "netperf"},
}, {
	Name: Ping, Transport: ICMP, Shape: Echo,
	Axes: []string{KeyMsgSize}, Knobs: knobs(patternKnobs, []string{"count", "interval"}),
	// 56 bytes is iputils ping's payload.
	Defaults:      Defaults{MsgSize: 56, Interval: 100 * time.Millisecond},
	Bounds:        Bounds{MinSize: MinEchoPayload, MaxSize: MaxEchoPayload, MaxCount: MaxEchoCount, MaxInterval: MaxEchoInterval},
	PrimaryMetric: model.RTTAvgUS, Engines: []string{"ping"},
}}

// Lookup returns the named workload's row.
func Lookup(name string) (Row, bool) {
	i := slices.IndexFunc(rows, func(r Row) bool { return r.Name == name })
	if i < 0 {
		return Row{}, false
	}
	return rows[i], true
}

// Get returns the named workload's row, or the zero Row for a name the
// table lacks.
func Get(name string) Row {
	r, _ := Lookup(name)
	return r
}

// Names lists the workloads in the table's order.
func Names() []string {
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Name
	}
	return names
}

// PrimaryMetric is the metric a table leads with for a workload;
// throughput for a name the table lacks.
func PrimaryMetric(name string) string {
	if r, ok := Lookup(name); ok {
		return r.PrimaryMetric
	}
	return model.ThroughputBPS
}

// ByEngine maps each external engine to the workloads it runs, in the
// table's order. An engine it does not list (native) runs every workload.
func ByEngine() map[string][]string {
	out := map[string][]string{}
	for _, r := range rows {
		for _, e := range r.Engines {
			out[e] = append(out[e], r.Name)
		}
	}
	return out
}

// Register adds a row to the table and returns the function that removes
// it again. It is for tests and experiments that try a workload out; the
// table is not safe for use by other goroutines while it changes. It
// panics if the name is taken.
func Register(r Row) (unregister func()) {
	if _, ok := Lookup(r.Name); ok {
		panic("workload: " + r.Name + " is registered already")
	}
	rows = append(slices.Clip(rows), r)
	return func() {
		rows = slices.DeleteFunc(slices.Clone(rows), func(x Row) bool { return x.Name == r.Name })
	}
}
