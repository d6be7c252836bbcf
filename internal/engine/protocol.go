package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"time"

	"cnbench/internal/model"
)

// Op names a control operation.
type Op string

const (
	OpListen  Op = "listen"
	OpRun     Op = "run"
	OpCollect Op = "collect"
	OpQuit    Op = "quit"
)

// Workloads the engine can run.
const (
	WorkloadTCPStream = "tcp_stream"
	WorkloadTCPRR     = "tcp_rr"
)

// Limits on request values. They reject requests that could only come from
// a bug, before they turn into exhausted memory or threads.
const (
	MaxFlows       = 100000
	MaxMessageSize = 64 << 20
	MaxDuration    = 24 * time.Hour
	MaxCollectWait = time.Hour
	// MaxLineSize is the longest control line the engine accepts.
	MaxLineSize = 1 << 20
)

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
	// NoDelay sets TCP_NODELAY on stream flows; rr flows always have it.
	NoDelay bool `json:"nodelay,omitempty"`
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
	// TCPRetransmits is absent when the kernel did not report TCP_INFO.
	TCPRetransmits *int64 `json:"tcp_retransmits,omitempty"`

	// collect
	ReceivedBytes int64            `json:"received_bytes,omitempty"`
	FirstByteNS   int64            `json:"first_byte_ns,omitempty"`
	LastByteNS    int64            `json:"last_byte_ns,omitempty"`
	Flows         int              `json:"flows,omitempty"`
	Intervals     []model.Interval `json:"intervals,omitempty"`

	// run and collect
	ElapsedNS    int64 `json:"elapsed_ns,omitempty"`
	Transactions int64 `json:"transactions,omitempty"`
}

// RunResult is the client side's account of a run.
type RunResult struct {
	SentBytes int64
	// Elapsed runs from the start of sending to the last flow's last write.
	Elapsed      time.Duration
	Transactions int64
	// LatencyHDR is hdrhistogram's V2 compressed encoding (as returned by
	// Histogram.Encode and read by hdrhistogram.Decode); nil for streams.
	LatencyHDR       []byte
	Retransmits      int64
	RetransmitsKnown bool
}

// SessionResult is the listener side's account of a session.
type SessionResult struct {
	ReceivedBytes int64
	// FirstByte and LastByte are on the engine's monotonic clock.
	FirstByte time.Duration
	LastByte  time.Duration
	Elapsed   time.Duration
	Flows     int
	// Transactions served, for tcp_rr sessions.
	Transactions int64
	// Intervals hold received bytes per second, from the first byte.
	Intervals []model.Interval
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
}

// MarshalJSON writes exactly the fields that apply to the request's op,
// zero values included, so that DecodeRequest accepts what it produces.
func (r Request) MarshalJSON() ([]byte, error) {
	op := string(r.Op)
	w := wireRequest{ID: &r.ID, Op: &op}
	switch r.Op {
	case OpListen:
		w.Addr, w.Port = &r.Addr, &r.Port
	case OpRun:
		w.Workload, w.Target, w.Session, w.Flows = &r.Workload, &r.Target, &r.Session, &r.Flows
		w.DurationMS = &r.DurationMS
		if r.Workload == WorkloadTCPRR {
			w.RequestSize, w.ResponseSize = &r.RequestSize, &r.ResponseSize
		} else {
			w.MsgSize = &r.MsgSize
		}
		if r.NoDelay {
			w.NoDelay = &r.NoDelay
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
	case OpRun:
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
	}
	for _, f := range fields {
		if f.present && !slices.Contains(allowed, f.name) {
			return fmt.Errorf("field %s does not apply", f.name)
		}
	}
	return nil
}

func (w *wireRequest) decodeListen(req *Request) error {
	if err := w.only("addr", "port"); err != nil {
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
	var err error
	switch spec.Workload {
	case WorkloadTCPStream:
		err = w.only("workload", "target", "session", "flows", "msg_size", "duration_ms", "nodelay")
	case WorkloadTCPRR:
		err = w.only("workload", "target", "session", "flows", "request_size", "response_size", "duration_ms", "nodelay")
	default:
		return fmt.Errorf("unknown workload %q", spec.Workload)
	}
	if err != nil {
		return err
	}
	if w.Target == nil {
		return errors.New("missing field target")
	}
	target, err := netip.ParseAddrPort(*w.Target)
	if err != nil {
		return fmt.Errorf("target %q is not ip:port", *w.Target)
	}
	if target.Port() == 0 || target.Addr().IsUnspecified() {
		return fmt.Errorf("target %q cannot be connected to", *w.Target)
	}
	spec.Target = *w.Target
	if w.Session == nil {
		return errors.New("missing field session")
	}
	spec.Session = *w.Session
	if spec.Flows, err = intField("flows", w.Flows, 1, MaxFlows); err != nil {
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
	if spec.Workload == WorkloadTCPRR {
		if spec.RequestSize, err = intField("request_size", w.RequestSize, 1, MaxMessageSize); err != nil {
			return err
		}
		spec.ResponseSize, err = intField("response_size", w.ResponseSize, 1, MaxMessageSize)
		return err
	}
	spec.MsgSize, err = intField("msg_size", w.MsgSize, 1, MaxMessageSize)
	return err
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
