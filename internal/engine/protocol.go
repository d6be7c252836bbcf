package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"cnbench/internal/model"
	"cnbench/internal/workload"
)

// Op names a control operation.
type Op string

const (
	OpListen Op = "listen"
	OpRun    Op = "run"
	// OpConnect readies a run ahead of it: its flows connected, each on
	// its own thread. The run of the same session then only starts them.
	OpConnect Op = "connect"
	OpCollect Op = "collect"
	OpQuit    Op = "quit"
)

// Workloads the engine can run; the workload table holds their facts.
const (
	WorkloadTCPStream = workload.TCPStream
	WorkloadTCPRR     = workload.TCPRR
	WorkloadTCPCRR    = workload.TCPCRR
	WorkloadUDPStream = workload.UDPStream
	WorkloadUDPRR     = workload.UDPRR
	WorkloadPing      = workload.Ping
)

// Workloads lists what the engine runs.
var Workloads = []string{WorkloadTCPStream, WorkloadTCPRR, WorkloadTCPCRR, WorkloadUDPStream, WorkloadUDPRR, WorkloadPing}

// Limits on request values. They reject requests that could only come from
// a bug, before they turn into exhausted memory or threads.
const (
	MaxFlows       = 100000
	MaxMessageSize = workload.MaxMessageSize
	MaxDuration    = 24 * time.Hour
	MaxCollectWait = time.Hour
	// MaxLineSize is the longest control line the engine accepts.
	MaxLineSize = 1 << 20
	// The bounds of datagrams and echoes are the workload table's.
	MaxDatagram    = workload.MaxDatagram
	MinDatagram    = workload.MinDatagram
	MinPingPayload = workload.MinEchoPayload
	MaxPingPayload = workload.MaxEchoPayload
	MaxPingCount   = workload.MaxEchoCount
	MaxPingGap     = workload.MaxEchoInterval
)

// SocketOptions are the TCP and socket knobs of a run or a listener;
// zero values leave the kernel's defaults.
type SocketOptions struct {
	// MSS clamps the maximum segment size (TCP_MAXSEG), set before the
	// connection is made so both directions use it.
	MSS int `json:"mss,omitempty"`
	// SendBuffer and ReceiveBuffer set SO_SNDBUF and SO_RCVBUF (the
	// kernel doubles them for its bookkeeping, as setsockopt(7) says).
	SendBuffer    int `json:"send_buffer,omitempty"`
	ReceiveBuffer int `json:"receive_buffer,omitempty"`
	// CC names the congestion control algorithm (TCP_CONGESTION).
	CC string `json:"cc,omitempty"`
	// Nagle leaves Nagle's algorithm on for request/response flows, which
	// otherwise set TCP_NODELAY.
	Nagle bool `json:"nagle,omitempty"`
}

// RunSpec describes one timed workload run from the client side.
type RunSpec struct {
	Workload string `json:"workload"`
	Target   string `json:"target"` // "ip:port" of a listener
	Session  uint64 `json:"session"`
	Flows    int    `json:"flows"`
	// MsgSize is the size of each write (tcp_stream only).
	MsgSize int `json:"msg_size,omitempty"`
	// RequestSize and ResponseSize are the transaction sizes (tcp_rr only).
	RequestSize  int   `json:"request_size,omitempty"`
	ResponseSize int   `json:"response_size,omitempty"`
	DurationMS   int64 `json:"duration_ms"`
	// NoDelay sets TCP_NODELAY on stream flows; rr flows have it unless
	// Nagle is set.
	NoDelay bool `json:"nodelay,omitempty"`
	// RateBPS or RatePPS pace each udp_stream flow to an offered rate of
	// UDP payload bits or datagrams per second; zero is unlimited.
	RateBPS int64 `json:"rate_bps,omitempty"`
	RatePPS int64 `json:"rate_pps,omitempty"`
	// Count and IntervalUS shape a ping run: Count echoes (0: as many as
	// fit the duration) IntervalUS apart. MsgSize is the echo payload.
	Count      int   `json:"count,omitempty"`
	IntervalUS int64 `json:"interval_us,omitempty"`
	// Netns is the network namespace, as a file such as /run/netns/NAME,
	// that the run's or the listener's sockets are opened in; empty is
	// the engine's own. It lets one engine process serve every endpoint
	// of a host: a socket stays in the namespace it was made in.
	Netns string `json:"netns,omitempty"`
	// Endpoint names the endpoint a run is for where one engine serves
	// several, even in one namespace (the host mode's endpoints share
	// their host's): each endpoint holds one run connected ahead.
	Endpoint string `json:"endpoint,omitempty"`
	SocketOptions
}

// Request is one control line sent to the engine. Which fields apply
// depends on Op; Session names the session for both run and collect.
type Request struct {
	ID uint64
	Op Op
	// Addr and Port are the listen address.
	Addr string
	Port int
	RunSpec
	// TimeoutMS bounds how long collect waits for a session's flows.
	TimeoutMS int64
}

// Response answers the request with the same ID. When OK is false, Error
// says why and no other field is meaningful.
type Response struct {
	ID    uint64 `json:"id"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`

	// listen
	Port int `json:"port,omitempty"`

	// run
	SentBytes int64 `json:"sent_bytes,omitempty"`
	// LatencyHDR is the merged per-transaction latency histogram (ns) as
	// produced by hdrhistogram's Encode, which is base64 text already.
	LatencyHDR string `json:"latency_hdr,omitempty"`
	// BeganNS is when the run's flows started, on the engine's monotonic
	// clock (see ClockOriginUnixNS).
	BeganNS int64 `json:"began_ns,omitempty"`
	// TCPRetransmits is absent when the kernel did not report TCP_INFO.
	TCPRetransmits *int64 `json:"tcp_retransmits,omitempty"`
	// TCPRetransmittedBytes is the payload those retransmits carried.
	TCPRetransmittedBytes *int64 `json:"tcp_retransmitted_bytes,omitempty"`
	// SentPackets are datagrams (or echoes) sent; Lost are udp_rr
	// transactions or echoes that got no answer in time.
	SentPackets int64 `json:"sent_packets,omitempty"`
	Lost        int64 `json:"lost,omitempty"`
	// Ping round trips, in nanoseconds, over the echoes answered.
	RTT *RTTStats `json:"rtt,omitempty"`

	// collect
	ReceivedBytes int64 `json:"received_bytes,omitempty"`
	FirstByteNS   int64 `json:"first_byte_ns,omitempty"`
	LastByteNS    int64 `json:"last_byte_ns,omitempty"`
	// ClockOriginUnixNS is the wall-clock time of the engine's monotonic
	// clock's zero, so that the first and last bytes of sessions, and the
	// starts of runs, that engines on one machine saw can be laid on one
	// time line.
	ClockOriginUnixNS int64            `json:"clock_origin_unix_ns,omitempty"`
	Flows             int              `json:"flows,omitempty"`
	FlowBytes         []int64          `json:"flow_bytes,omitempty"`
	Intervals         []model.Interval `json:"intervals,omitempty"`
	// UDP: datagrams received, those the senders reported sending, their
	// difference, arrivals with a sequence number below one already seen,
	// and the mean over flows of RFC 3550 interarrival jitter.
	Packets    int64   `json:"packets,omitempty"`
	PeerSent   int64   `json:"peer_sent,omitempty"`
	PeerLost   int64   `json:"peer_lost,omitempty"`
	OutOfOrder int64   `json:"out_of_order,omitempty"`
	JitterNS   float64 `json:"jitter_ns,omitempty"`

	// run and collect
	ElapsedNS    int64 `json:"elapsed_ns,omitempty"`
	Transactions int64 `json:"transactions,omitempty"`
}

// RTTStats summarise ping round trips in nanoseconds; Mdev is the
// standard deviation as iputils ping computes it.
type RTTStats struct {
	Min  float64 `json:"min"`
	Avg  float64 `json:"avg"`
	Max  float64 `json:"max"`
	Mdev float64 `json:"mdev"`
}

// RunResult is the client side's account of a run.
type RunResult struct {
	SentBytes int64
	// Elapsed runs from the start of sending to the last flow's last write.
	Elapsed time.Duration
	// Began is when sending started, on the wall clock; zero when the
	// engine did not say.
	Began        time.Time
	Transactions int64
	// LatencyHDR is hdrhistogram's V2 compressed encoding (as returned by
	// Histogram.Encode and read by hdrhistogram.Decode); nil for streams.
	LatencyHDR       []byte
	Retransmits      int64
	RetransmitsKnown bool
	// RetransmittedBytes is their payload, when RetransmittedBytesKnown.
	RetransmittedBytes      int64
	RetransmittedBytesKnown bool
	// SentPackets and Lost are datagrams or echoes sent and unanswered.
	SentPackets, Lost int64
	// RTT is set for ping runs that got at least one reply.
	RTT *RTTStats
}

// SessionResult is the listener side's account of a session.
type SessionResult struct {
	ReceivedBytes int64
	// FirstByte and LastByte are on the engine's monotonic clock.
	FirstByte time.Duration
	LastByte  time.Duration
	Elapsed   time.Duration
	// ClockOrigin is the wall-clock time of that clock's zero; zero when
	// the engine did not say.
	ClockOrigin time.Time
	Flows       int
	// FlowBytes are the bytes each flow received, by flow index.
	FlowBytes []int64
	// Transactions served, for tcp_rr sessions.
	Transactions int64
	// Intervals hold received bytes per second, from the first byte.
	Intervals []model.Interval
	// UDP sessions: see Response.
	Packets, PeerSent, PeerLost, OutOfOrder int64
	JitterNS                                float64
}

// wireRequest is the JSON form of a Request. Pointers tell a missing field
// from a zero one, which both validation and encoding need.
type wireRequest struct {
	ID           *uint64 `json:"id"`
	Op           *string `json:"op"`
	Addr         *string `json:"addr,omitempty"`
	Port         *int    `json:"port,omitempty"`
	Workload     *string `json:"workload,omitempty"`
	Target       *string `json:"target,omitempty"`
	Session      *uint64 `json:"session,omitempty"`
	Flows        *int    `json:"flows,omitempty"`
	MsgSize      *int    `json:"msg_size,omitempty"`
	RequestSize  *int    `json:"request_size,omitempty"`
	ResponseSize *int    `json:"response_size,omitempty"`
	DurationMS   *int64  `json:"duration_ms,omitempty"`
	NoDelay      *bool   `json:"nodelay,omitempty"`
	TimeoutMS    *int64  `json:"timeout_ms,omitempty"`
	RateBPS      *int64  `json:"rate_bps,omitempty"`
	RatePPS      *int64  `json:"rate_pps,omitempty"`
	Count        *int    `json:"count,omitempty"`
	IntervalUS   *int64  `json:"interval_us,omitempty"`
	MSS          *int    `json:"mss,omitempty"`
	SendBuffer   *int    `json:"send_buffer,omitempty"`
	RecvBuffer   *int    `json:"receive_buffer,omitempty"`
	CC           *string `json:"cc,omitempty"`
	Nagle        *bool   `json:"nagle,omitempty"`
	Netns        *string `json:"netns,omitempty"`
	Endpoint     *string `json:"endpoint,omitempty"`
}

// putOptions sets the socket option fields that are not zero.
func (w *wireRequest) putOptions(o *SocketOptions) {
	if o.MSS != 0 {
		w.MSS = &o.MSS
	}
	if o.SendBuffer != 0 {
		w.SendBuffer = &o.SendBuffer
	}
	if o.ReceiveBuffer != 0 {
		w.RecvBuffer = &o.ReceiveBuffer
	}
	if o.CC != "" {
		w.CC = &o.CC
	}
	if o.Nagle {
		w.Nagle = &o.Nagle
	}
}

// optionFields are the names of the socket option fields.
var optionFields = []string{"mss", "send_buffer", "receive_buffer", "cc", "nagle"}

// maxSocketBuffer bounds SO_SNDBUF and SO_RCVBUF requests.
const maxSocketBuffer = 1 << 30

// decodeOptions reads the socket option fields that are present.
func (w *wireRequest) decodeOptions(o *SocketOptions) error {
	var err error
	if w.MSS != nil {
		// TCP_MAXSEG accepts 88 (the kernel's minimum) up to 65535 - 40.
		if o.MSS, err = intField("mss", w.MSS, 88, 65495); err != nil {
			return err
		}
	}
	if w.SendBuffer != nil {
		if o.SendBuffer, err = intField("send_buffer", w.SendBuffer, 1, maxSocketBuffer); err != nil {
			return err
		}
	}
	if w.RecvBuffer != nil {
		if o.ReceiveBuffer, err = intField("receive_buffer", w.RecvBuffer, 1, maxSocketBuffer); err != nil {
			return err
		}
	}
	if w.CC != nil {
		if *w.CC == "" || len(*w.CC) > 15 || strings.ContainsAny(*w.CC, "\x00/ ") {
			return fmt.Errorf("cc %q is not a congestion control name", *w.CC)
		}
		o.CC = *w.CC
	}
	if w.Nagle != nil {
		o.Nagle = *w.Nagle
	}
	return nil
}

// MarshalJSON writes exactly the fields that apply to the request's op,
// zero values included, so that DecodeRequest accepts what it produces.
func (r Request) MarshalJSON() ([]byte, error) {
	op := string(r.Op)
	w := wireRequest{ID: &r.ID, Op: &op}
	switch r.Op {
	case OpListen:
		w.Addr, w.Port = &r.Addr, &r.Port
		w.putOptions(&r.SocketOptions)
		w.putNetns(r.Netns)
	case OpRun, OpConnect:
		w.Workload, w.Target, w.Session, w.Flows = &r.Workload, &r.Target, &r.Session, &r.Flows
		w.DurationMS = &r.DurationMS
		switch r.Workload {
		case WorkloadTCPRR, WorkloadTCPCRR, WorkloadUDPRR:
			w.RequestSize, w.ResponseSize = &r.RequestSize, &r.ResponseSize
		default:
			w.MsgSize = &r.MsgSize
		}
		if r.NoDelay {
			w.NoDelay = &r.NoDelay
		}
		if r.RateBPS != 0 {
			w.RateBPS = &r.RateBPS
		}
		if r.RatePPS != 0 {
			w.RatePPS = &r.RatePPS
		}
		if r.Count != 0 {
			w.Count = &r.Count
		}
		if r.IntervalUS != 0 {
			w.IntervalUS = &r.IntervalUS
		}
		w.putOptions(&r.SocketOptions)
		w.putNetns(r.Netns)
		if r.Endpoint != "" {
			w.Endpoint = &r.Endpoint
		}
	case OpCollect:
		w.Session, w.TimeoutMS = &r.Session, &r.TimeoutMS
	}
	return json.Marshal(w)
}

// UnmarshalJSON applies the same validation as DecodeRequest.
func (r *Request) UnmarshalJSON(data []byte) error {
	req, err := DecodeRequest(data)
	if err != nil {
		return err
	}
	*r = req
	return nil
}

// DecodeRequest parses and validates one control line. On error, the
// returned Request still carries the id whenever it could be read, so the
// error response can be matched by the caller.
func DecodeRequest(line []byte) (Request, error) {
	if len(line) > MaxLineSize {
		return Request{}, fmt.Errorf("request of %d bytes exceeds %d", len(line), MaxLineSize)
	}
	var w wireRequest
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Request{ID: lenientID(line)}, fmt.Errorf("bad request json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Request{ID: lenientID(line)}, errors.New("bad request json: trailing data after the object")
	}
	if w.ID == nil {
		return Request{}, errors.New("missing field id")
	}
	req := Request{ID: *w.ID}
	if w.Op == nil {
		return req, errors.New("missing field op")
	}
	req.Op = Op(*w.Op)
	var err error
	switch req.Op {
	case OpListen:
		err = w.decodeListen(&req)
	case OpRun, OpConnect:
		err = w.decodeRun(&req)
	case OpCollect:
		err = w.decodeCollect(&req)
	case OpQuit:
		err = w.only()
	default:
		err = fmt.Errorf("unknown op %q", *w.Op)
	}
	if err != nil {
		return req, fmt.Errorf("%s: %w", req.Op, err)
	}
	return req, nil
}

// lenientID recovers the id of a request that failed strict decoding.
func lenientID(line []byte) uint64 {
	var probe struct {
		ID uint64 `json:"id"`
	}
	// A decoder, unlike Unmarshal, still yields the id when the object is
	// followed by garbage.
	_ = json.NewDecoder(bytes.NewReader(line)).Decode(&probe)
	return probe.ID
}

// only reports the first field present that is not in allowed.
func (w *wireRequest) only(allowed ...string) error {
	fields := []struct {
		name    string
		present bool
	}{
		{"addr", w.Addr != nil},
		{"port", w.Port != nil},
		{"workload", w.Workload != nil},
		{"target", w.Target != nil},
		{"session", w.Session != nil},
		{"flows", w.Flows != nil},
		{"msg_size", w.MsgSize != nil},
		{"request_size", w.RequestSize != nil},
		{"response_size", w.ResponseSize != nil},
		{"duration_ms", w.DurationMS != nil},
		{"nodelay", w.NoDelay != nil},
		{"timeout_ms", w.TimeoutMS != nil},
		{"rate_bps", w.RateBPS != nil},
		{"rate_pps", w.RatePPS != nil},
		{"count", w.Count != nil},
		{"interval_us", w.IntervalUS != nil},
		{"mss", w.MSS != nil},
		{"send_buffer", w.SendBuffer != nil},
		{"receive_buffer", w.RecvBuffer != nil},
		{"cc", w.CC != nil},
		{"nagle", w.Nagle != nil},
		{"netns", w.Netns != nil},
		{"endpoint", w.Endpoint != nil},
	}
	for _, f := range fields {
		if f.present && !slices.Contains(allowed, f.name) {
			return fmt.Errorf("field %s does not apply", f.name)
		}
	}
	return nil
}

func (w *wireRequest) decodeListen(req *Request) error {
	if err := w.only(append([]string{"addr", "port", "netns"}, optionFields...)...); err != nil {
		return err
	}
	if err := w.decodeOptions(&req.SocketOptions); err != nil {
		return err
	}
	if err := w.decodeNetns(&req.RunSpec); err != nil {
		return err
	}
	if w.Addr == nil {
		return errors.New("missing field addr")
	}
	if _, err := netip.ParseAddr(*w.Addr); err != nil {
		return fmt.Errorf("addr %q is not an ip address", *w.Addr)
	}
	if w.Port == nil {
		return errors.New("missing field port")
	}
	if *w.Port < 0 || *w.Port > 65535 {
		return fmt.Errorf("port %d out of range 0..65535", *w.Port)
	}
	req.Addr, req.Port = *w.Addr, *w.Port
	return nil
}

func (w *wireRequest) decodeRun(req *Request) error {
	if w.Workload == nil {
		return errors.New("missing field workload")
	}
	spec := &req.RunSpec
	spec.Workload = *w.Workload
	row, ok := workload.Lookup(spec.Workload)
	if !ok || !slices.Contains(Workloads, spec.Workload) {
		return fmt.Errorf("unknown workload %q", spec.Workload)
	}
	if err := w.only(runFields(row)...); err != nil {
		return err
	}
	if err := w.decodeOptions(&spec.SocketOptions); err != nil {
		return err
	}
	if err := w.decodeRunCommon(spec, row); err != nil {
		return err
	}
	var err error
	switch row.Shape {
	case workload.RequestResponse, workload.ConnectRequestResponse:
		if spec.RequestSize, err = intField("request_size", w.RequestSize, row.Bounds.MinSize, row.Bounds.MaxSize); err != nil {
			return err
		}
		spec.ResponseSize, err = intField("response_size", w.ResponseSize, row.Bounds.MinSize, row.Bounds.MaxSize)
		return err
	case workload.Echo:
		return w.decodeEcho(spec, row.Bounds)
	}
	if spec.MsgSize, err = intField("msg_size", w.MsgSize, row.Bounds.MinSize, row.Bounds.MaxSize); err != nil {
		return err
	}
	if row.Transport == workload.UDP {
		return w.decodeRate(spec)
	}
	return nil
}

// runFields are the fields a run of the workload may hold: those of an
// echo, or the common ones, the sizes of its shape, and the knobs of its
// transport.
func runFields(row workload.Row) []string {
	if row.Shape == workload.Echo {
		return []string{"workload", "target", "session", "flows", "duration_ms", "msg_size", "count", "interval_us", "netns", "endpoint"}
	}
	fields := append([]string{"workload", "target", "session", "flows", "duration_ms", "endpoint"}, optionFields...)
	// A tcp_crr flow connects anew for every transaction, on its own
	// thread, where a namespace entered for the connect would not reach.
	if row.Shape != workload.ConnectRequestResponse {
		fields = append(fields, "netns")
	}
	if row.Shape == workload.Stream {
		fields = append(fields, "msg_size")
	} else {
		fields = append(fields, "request_size", "response_size")
	}
	switch {
	case row.Transport == workload.TCP:
		fields = append(fields, "nodelay")
	case row.Shape == workload.Stream:
		fields = append(fields, "rate_bps", "rate_pps")
	}
	return fields
}

// decodeRunCommon reads the fields every run has: target, session, flows
// (one for a workload without a flows axis), duration, and nodelay.
func (w *wireRequest) decodeRunCommon(spec *RunSpec, row workload.Row) error {
	if w.Target == nil {
		return errors.New("missing field target")
	}
	if err := checkTarget(spec.Workload, *w.Target); err != nil {
		return err
	}
	spec.Target = *w.Target
	if w.Session == nil {
		return errors.New("missing field session")
	}
	spec.Session = *w.Session
	maxFlows := MaxFlows
	if !row.Takes(workload.KeyFlows) {
		maxFlows = 1
	}
	var err error
	if spec.Flows, err = intField("flows", w.Flows, 1, maxFlows); err != nil {
		return err
	}
	if w.DurationMS == nil {
		return errors.New("missing field duration_ms")
	}
	if *w.DurationMS < 1 || *w.DurationMS > MaxDuration.Milliseconds() {
		return fmt.Errorf("duration_ms %d out of range 1..%d", *w.DurationMS, MaxDuration.Milliseconds())
	}
	spec.DurationMS = *w.DurationMS
	if w.NoDelay != nil {
		spec.NoDelay = *w.NoDelay
	}
	if w.Endpoint != nil {
		e := *w.Endpoint
		if e == "" || len(e) > 64 || strings.ContainsFunc(e, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return fmt.Errorf("endpoint %q is not a name of 1 to 64 printable characters", e)
		}
		spec.Endpoint = e
	}
	return w.decodeNetns(spec)
}

func (w *wireRequest) putNetns(path string) {
	if path != "" {
		w.Netns = &path
	}
}

// decodeNetns reads the namespace a run's or listener's sockets open in:
// a clean absolute path, whose file setns(2) checks when it is entered.
func (w *wireRequest) decodeNetns(spec *RunSpec) error {
	if w.Netns == nil {
		return nil
	}
	path := *w.Netns
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.ContainsRune(path, 0) || len(path) > 4096 {
		return fmt.Errorf("netns %q is not a clean absolute path", path)
	}
	spec.Netns = path
	return nil
}

// decodeRate reads a UDP stream's offered rate, if it has one.
func (w *wireRequest) decodeRate(spec *RunSpec) error {
	if w.RateBPS != nil && w.RatePPS != nil {
		return errors.New("rate_bps and rate_pps exclude each other")
	}
	if w.RateBPS != nil {
		if *w.RateBPS < 1 {
			return fmt.Errorf("rate_bps %d is not positive", *w.RateBPS)
		}
		spec.RateBPS = *w.RateBPS
	}
	if w.RatePPS != nil {
		if *w.RatePPS < 1 || *w.RatePPS > 1e9 {
			return fmt.Errorf("rate_pps %d out of range 1..1000000000", *w.RatePPS)
		}
		spec.RatePPS = *w.RatePPS
	}
	return nil
}

// decodeEcho reads an echo run's payload size, count and interval, within
// the row's bounds.
func (w *wireRequest) decodeEcho(spec *RunSpec, b workload.Bounds) error {
	var err error
	if spec.MsgSize, err = intField("msg_size", w.MsgSize, b.MinSize, b.MaxSize); err != nil {
		return err
	}
	if w.Count != nil {
		if spec.Count, err = intField("count", w.Count, 1, b.MaxCount); err != nil {
			return err
		}
	}
	if w.IntervalUS == nil {
		return errors.New("missing field interval_us")
	}
	if *w.IntervalUS < 1 || *w.IntervalUS > b.MaxInterval.Microseconds() {
		return fmt.Errorf("interval_us %d out of range 1..%d", *w.IntervalUS, b.MaxInterval.Microseconds())
	}
	spec.IntervalUS = *w.IntervalUS
	return nil
}

// checkTarget checks a run's target: an address to ping, or ip:port of a
// listener for everything else.
func checkTarget(workload, target string) error {
	if workload == WorkloadPing {
		addr, err := netip.ParseAddr(target)
		if err != nil || addr.IsUnspecified() || addr.Zone() != "" {
			return fmt.Errorf("target %q is not an address to ping", target)
		}
		return nil
	}
	ap, err := netip.ParseAddrPort(target)
	if err != nil {
		return fmt.Errorf("target %q is not ip:port", target)
	}
	if ap.Port() == 0 || ap.Addr().IsUnspecified() {
		return fmt.Errorf("target %q cannot be connected to", target)
	}
	return nil
}

func (w *wireRequest) decodeCollect(req *Request) error {
	if err := w.only("session", "timeout_ms"); err != nil {
		return err
	}
	if w.Session == nil {
		return errors.New("missing field session")
	}
	if w.TimeoutMS == nil {
		return errors.New("missing field timeout_ms")
	}
	if *w.TimeoutMS < 1 || *w.TimeoutMS > MaxCollectWait.Milliseconds() {
		return fmt.Errorf("timeout_ms %d out of range 1..%d", *w.TimeoutMS, MaxCollectWait.Milliseconds())
	}
	req.Session, req.TimeoutMS = *w.Session, *w.TimeoutMS
	return nil
}

func intField(name string, v *int, lo, hi int) (int, error) {
	if v == nil {
		return 0, fmt.Errorf("missing field %s", name)
	}
	if *v < lo || *v > hi {
		return 0, fmt.Errorf("%s %d out of range %d..%d", name, *v, lo, hi)
	}
	return *v, nil
}
