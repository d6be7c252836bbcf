// Package agent is cnbench on a machine of its own: a daemon that builds
// cnbench's hosts, endpoints and engines there on request of a controller
// (a `cnbench run` elsewhere), over mutual TLS, and removes all of it when
// the controller says so, disconnects, or falls silent.
//
// The API is JSON over HTTP/2, one typed request struct per operation,
// decoded strictly (unknown fields refused) and checked before anything is
// done. It has no operation that names an interface, a route, a file or a
// program: the only real interface it ever uses is the parent NIC fixed on
// the agent's own command line, and the only program it starts is its own
// traffic engine, whose control lines it checks too. HTTP/2 carries the two
// long-lived streams, the session's heartbeat and each engine's control
// lines, beside the short calls on one connection.
package agent

import (
	"errors"
	"fmt"
	"time"

	"cnbench/internal/netstat"
)

// API paths. Every call is a POST of one request struct.
const (
	PathSession = "/v1/session" // SessionRequest -> SessionResponse
	PathHold    = "/v1/hold"    // HoldRequest line, then heartbeat lines
	PathHost    = "/v1/host"    // HostRequest -> HostResponse
	PathEP      = "/v1/endpoint"
	PathExpose  = "/v1/expose"
	PathEngine  = "/v1/engine" // EngineRequest -> EngineResponse
	PathAttach  = "/v1/attach" // AttachRequest line, then engine control lines both ways
	PathStop    = "/v1/stop"   // StopRequest -> Empty
	PathUsage   = "/v1/usage"  // UsageRequest -> UsageResponse
	PathClose   = "/v1/close"  // CloseRequest -> Empty
	maxBodySize = 64 << 10     // a request struct is a few hundred bytes
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

// StopRequest ends an engine: it gets Grace to exit by itself after its
// input closes, then is killed.
type StopRequest struct {
	Session string `json:"session"`
	Engine  string `json:"engine"`
	GraceMS int64  `json:"grace_ms"`
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
	StealNS int64          `json:"steal_ns"`
	Links   []netstat.Link `json:"links"`
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

// ErrRefused marks a request the agent will not carry out whatever the
// machine: it names something outside cnbench's own objects.
var ErrRefused = errors.New("refused")

// ErrNotFound marks a session, endpoint or engine the agent does not know,
// such as one it removed when its controller fell silent.
var ErrNotFound = errors.New("not found")

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// Limits the agent holds to.
const (
	// DefaultTimeout is how long an agent waits for a silent controller.
	DefaultTimeout = 10 * time.Second
	// MinTimeout keeps heartbeats from flooding the agent.
	MinTimeout = 500 * time.Millisecond
	// MaxTimeout bounds how long objects outlive their controller.
	MaxTimeout = 5 * time.Minute
	// maxSessions bounds what one controller can make an agent hold.
	maxSessions  = 16
	maxEndpoints = 8
	maxEngines   = 8
	maxHosts     = 16
)
