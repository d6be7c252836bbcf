// Package protocol is the one protocol of cnbench's agents: the typed
// requests and responses with which a controller (a `cnbench run`) has an
// agent build hosts and endpoints, start engines and read their CPU time
// and counters. An agent on another machine serves them as JSON over
// HTTP/2 with mutual TLS (package agent); the agent inside a VM guest
// serves the same messages as JSON lines over a virtio-serial port
// (package agent/guest). Every request struct is decoded strictly
// (unknown fields refused) and checked before anything is done.
package protocol

import "cnbench/internal/netstat"

// API paths. Every call is a POST of one request struct.
const (
	PathSession = "/v1/session" // SessionRequest -> SessionResponse
	PathHold    = "/v1/hold"    // HoldRequest line, then heartbeat lines
	PathHost    = "/v1/host"    // HostRequest -> HostResponse
	PathEP      = "/v1/endpoint"
	PathExpose  = "/v1/expose"
	PathEngine  = "/v1/engine"    // EngineRequest -> EngineResponse
	PathAttach  = "/v1/attach"    // AttachRequest line, then engine control lines both ways
	PathStop    = "/v1/stop"      // StopRequest -> Empty
	PathUsage   = "/v1/usage"     // UsageRequest -> UsageResponse
	PathProgram = "/v1/program"   // ProgramRequest -> ProgramResponse
	PathWait    = "/v1/wait"      // WaitRequest -> WaitResponse
	PathListen  = "/v1/listening" // ListeningRequest -> Empty
	PathClose   = "/v1/close"     // CloseRequest -> Empty
	// MaxBodySize bounds a request: a request struct is a few hundred
	// bytes.
	MaxBodySize = 64 << 10
)

// SessionRequest opens a session: a set of objects that live and die
// together. Timeout is how long the controller may stay silent; the agent
// clamps it to its own maximum.
type SessionRequest struct {
	TimeoutMS int64 `json:"timeout_ms"`
}

// SessionResponse names the new session.
type SessionResponse struct {
	Session string `json:"session"`
	// Token is the run token in the names of the session's objects on
	// the agent's machine.
	Token string `json:"token"`
	// HeartbeatMS is how often the controller must send a heartbeat on
	// the hold stream; TimeoutMS how long the agent waits for one.
	HeartbeatMS int64  `json:"heartbeat_ms"`
	TimeoutMS   int64  `json:"timeout_ms"`
	Hostname    string `json:"hostname"`
	Version     string `json:"version"`
	// BootID names the running kernel (/proc/sys/kernel/random/boot_id):
	// agents in containers on one node, each with a host name of its own,
	// read one machine's CPU time.
	BootID string `json:"boot_id,omitempty"`
	// Programs are the external engines the agent can start (see
	// ProgramRequest), those of them its machine or image has.
	Programs []string `json:"programs,omitempty"`
}

// HoldRequest is the first line of the hold stream; every further line is
// a heartbeat. The session ends when the stream does.
type HoldRequest struct {
	Session string `json:"session"`
}

// HostRequest builds the session's host: host Index of a topology of
// Hosts hosts on one underlay segment, with the given NIC controls.
type HostRequest struct {
	Session    string `json:"session"`
	Topology   string `json:"topology"`
	Index      int    `json:"index"`
	Hosts      int    `json:"hosts"`
	MTU        int    `json:"mtu,omitempty"`
	NICRateBPS int64  `json:"nic_rate_bps,omitempty"`
	GRO        string `json:"gro,omitempty"`
	GSO        string `json:"gso,omitempty"`
	TSO        string `json:"tso,omitempty"`
	TxChecksum string `json:"tx_checksum,omitempty"`
}

// HostResponse is the built host.
type HostResponse struct {
	Addr string `json:"addr"`
	NS   string `json:"ns"`
}

// EndpointRequest places an endpoint of a mode on the session's host.
// An agent inside a container has one endpoint, the container itself, of
// mode ContainerMode: Addr names which of its addresses the engine uses,
// and Peers the addresses beyond cnbench's range its engine may send to
// (the other endpoints of the case, on a cluster's own network).
type EndpointRequest struct {
	Session string   `json:"session"`
	Mode    string   `json:"mode"`
	Name    string   `json:"name"`
	Addr    string   `json:"addr,omitempty"`
	Peers   []string `json:"peers,omitempty"`
}

// ContainerMode is the one mode of an agent that runs inside a container.
const ContainerMode = "container"

// EndpointResponse is the placed endpoint.
type EndpointResponse struct {
	Addr string `json:"addr"`
	NS   string `json:"ns"`
}

// ExposeRequest publishes a port of a server endpoint as its mode does.
type ExposeRequest struct {
	Session  string `json:"session"`
	Endpoint string `json:"endpoint"`
	Port     int    `json:"port"`
}

// ExposeResponse is the address clients dial.
type ExposeResponse struct {
	Target string `json:"target"`
}

// EngineRequest starts cnbench's traffic engine in an endpoint.
type EngineRequest struct {
	Session  string `json:"session"`
	Endpoint string `json:"endpoint"`
}

// EngineResponse names the started engine.
type EngineResponse struct {
	Engine string `json:"engine"`
	PID    int    `json:"pid"`
}

// AttachRequest is the first line of an engine's control stream.
type AttachRequest struct {
	Session string `json:"session"`
	Engine  string `json:"engine"`
}

// StopRequest ends an engine, or a program: an engine gets Grace to exit
// by itself after its input closes, a program after SIGTERM; then it is
// killed. It names one of the two.
type StopRequest struct {
	Session string `json:"session"`
	Engine  string `json:"engine,omitempty"`
	Program string `json:"program,omitempty"`
	GraceMS int64  `json:"grace_ms"`
}

// ProgramRequest starts an external engine (iperf3, netperf, netserver,
// ping, sockperf) in an endpoint, as cnbench's drivers run it on this machine:
// Args is its command line, Args[0] the program. The agent refuses any
// option cnbench's drivers do not give, and any address but the
// endpoint's own, cnbench's range and the case's peers.
type ProgramRequest struct {
	Session  string   `json:"session"`
	Endpoint string   `json:"endpoint"`
	Args     []string `json:"args"`
}

// ProgramResponse names the started program.
type ProgramResponse struct {
	Program string `json:"program"`
	PID     int    `json:"pid"`
}

// WaitRequest waits up to TimeoutMS for a program to end.
type WaitRequest struct {
	Session   string `json:"session"`
	Program   string `json:"program"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// WaitResponse says whether the program ended, how ("exited with status
// 1", "was killed by SIGKILL"), and what it wrote: the first MiB of its
// standard output and 8 KiB of its standard error.
type WaitResponse struct {
	Ended    bool   `json:"ended"`
	ExitCode int    `json:"exit_code"`
	How      string `json:"how,omitempty"`
	Stdout   string `json:"stdout,omitempty"`
	Stderr   string `json:"stderr,omitempty"`
}

// ListeningRequest waits up to TimeoutMS until a socket of Proto (tcp,
// udp) listens on Port in the endpoint, as a program's server does once
// it is ready.
type ListeningRequest struct {
	Session   string `json:"session"`
	Endpoint  string `json:"endpoint"`
	Proto     string `json:"proto"`
	Port      int    `json:"port"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// UsageRequest reads an endpoint's CPU time and interface counters.
type UsageRequest struct {
	Session  string `json:"session"`
	Endpoint string `json:"endpoint"`
}

// UsageResponse is one reading.
type UsageResponse struct {
	UserNS   int64 `json:"user_ns"`
	SystemNS int64 `json:"system_ns"`
	// SoftirqNS is the machine's softirq time, which no cgroup is charged.
	SoftirqNS int64 `json:"softirq_ns"`
	// StealNS is the time the machine's hypervisor ran someone else on
	// its CPUs.
	StealNS int64 `json:"steal_ns"`
	// BusyNS is the machine's CPU time in anything but idle, iowait and
	// steal (cpu.Machine's Busy): a node's whole CPU, whatever ran it.
	BusyNS int64          `json:"busy_ns"`
	Links  []netstat.Link `json:"links"`
	// UDP are the UDP counters of the endpoint's namespace: what arrived
	// of a sockperf throughput run, which counts only what it sent.
	UDP netstat.UDP `json:"udp"`
}

// CloseRequest ends a session and removes everything it made.
type CloseRequest struct {
	Session string `json:"session"`
}

// Empty is the answer of calls that return nothing.
type Empty struct{}

// Error kinds, so a controller can tell a case to skip from one that
// failed.
const (
	KindUnsupported = "unsupported" // the agent's machine cannot build it
	KindRefused     = "refused"     // the request is outside what the API allows
	KindFailed      = "failed"
	KindNotFound    = "not_found"
)

// ErrorResponse is the body of every failed call.
type ErrorResponse struct {
	Kind  string `json:"kind"`
	Error string `json:"error"`
}

// SessionID is the session a request acts in.
func (r HostRequest) SessionID() string      { return r.Session }
func (r EndpointRequest) SessionID() string  { return r.Session }
func (r ExposeRequest) SessionID() string    { return r.Session }
func (r EngineRequest) SessionID() string    { return r.Session }
func (r StopRequest) SessionID() string      { return r.Session }
func (r UsageRequest) SessionID() string     { return r.Session }
func (r ProgramRequest) SessionID() string   { return r.Session }
func (r WaitRequest) SessionID() string      { return r.Session }
func (r ListeningRequest) SessionID() string { return r.Session }
