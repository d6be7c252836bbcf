package vm

import "cnbench/internal/agent/protocol"

// The guest agent speaks the agents' protocol (package agent/protocol)
// over a virtio-serial port named CtlPort: one JSON Request per line,
// each carrying one of the protocol's requests, answered by one JSON
// Reply per line carrying its response, in order. Each engine in the
// guest gets a port of its own (EnginePort), which carries the engine's
// own control protocol (internal/engine) unchanged, as its stdin and
// stdout would; on another machine the agent carries the same lines on
// an HTTP/2 stream.
const (
	CtlPort = "cnb.ctl"
	// EnginePorts is how many engine ports a guest has: more endpoints
	// than any topology places in one guest.
	EnginePorts = 4
)

// EnginePort names the i-th engine port.
func EnginePort(i int) string { return "cnb.e" + string(rune('0'+i)) }

// Ops of the agent.
const (
	OpHello    = "hello"
	OpSetup    = "setup"
	OpEndpoint = "endpoint"
	OpEngine   = "engine"
	OpUsage    = "usage"
)

// Request is one control line to the agent: its op and the protocol's
// request for it. A guest has no sessions: the serial port is its
// controller's alone, and the guest powers off when it closes.
type Request struct {
	Op       string                    `json:"op"`
	Setup    *Setup                    `json:"setup,omitempty"`
	Endpoint *protocol.EndpointRequest `json:"endpoint,omitempty"`
	Engine   *protocol.EngineRequest   `json:"engine,omitempty"`
	Usage    *protocol.UsageRequest    `json:"usage,omitempty"`
	// Port is the engine port an engine's stdin and stdout are.
	Port string `json:"port,omitempty"`
}

// Setup makes the guest host Index of the topology, as a HostRequest
// makes an agent's machine one: its NIC, found by MAC, becomes the
// host's nic0 in a namespace of its own, with an address on the underlay
// and routes to the other hosts' endpoint subnets.
type Setup struct {
	protocol.HostRequest
	Token  string  `json:"token"`
	MAC    string  `json:"mac"`
	Addr   string  `json:"addr"` // prefix, "198.18.0.3/16"
	Routes []Route `json:"routes,omitempty"`
}

// Route is a static route of the guest host.
type Route struct {
	Dst string `json:"dst"` // prefix
	Via string `json:"via"`
}

// Reply answers a request. When OK is false, Error says why, and
// Unsupported whether the guest cannot build what was asked rather than
// failed to.
type Reply struct {
	OK          bool   `json:"ok"`
	Error       string `json:"error,omitempty"`
	Unsupported bool   `json:"unsupported,omitempty"`
	// Kernel answers hello.
	Kernel   string                     `json:"kernel,omitempty"`
	Endpoint *protocol.EndpointResponse `json:"endpoint,omitempty"`
	Usage    *protocol.UsageResponse    `json:"usage,omitempty"`
}
