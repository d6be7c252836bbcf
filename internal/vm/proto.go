package vm

import "cnbench/internal/netstat"

// The guest agent is controlled over a virtio-serial port named CtlPort,
// one JSON Request per line, answered by one JSON Reply per line, in
// order. Each engine in the guest gets a port of its own (EnginePort),
// which carries the engine's own control protocol (internal/engine)
// unchanged, as its stdin and stdout would.
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
	OpCounters = "counters"
)

// Request is one control line to the agent.
type Request struct {
	Op string `json:"op"`
	// setup
	Setup *Setup `json:"setup,omitempty"`
	// endpoint: the mode and the endpoint's name; engine, usage,
	// counters: the endpoint's name.
	Mode     string `json:"mode,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	// engine: the port its stdin and stdout are.
	Port string `json:"port,omitempty"`
}

// Setup makes the guest a host of the topology: its NIC, found by MAC,
// becomes the host's nic0 in a namespace of its own, with an address on
// the underlay and routes to the other hosts' endpoint subnets.
type Setup struct {
	Token  string  `json:"token"`
	Index  int     `json:"index"`
	MAC    string  `json:"mac"`
	Addr   string  `json:"addr"` // prefix, "198.18.0.3/16"
	MTU    int     `json:"mtu,omitempty"`
	Routes []Route `json:"routes,omitempty"`
	// Offloads of the guest's veths: "on", "off" or "".
	GRO        string `json:"gro,omitempty"`
	GSO        string `json:"gso,omitempty"`
	TSO        string `json:"tso,omitempty"`
	TxChecksum string `json:"tx_checksum,omitempty"`
}

// Route is a static route of the guest host.
type Route struct {
	Dst string `json:"dst"` // prefix
	Via string `json:"via"`
}

// Reply answers a request. When OK is false, Error says why.
type Reply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Unsupported marks an error that means the guest cannot build what
	// was asked, rather than that building it failed.
	Unsupported bool `json:"unsupported,omitempty"`
	// hello
	Kernel string `json:"kernel,omitempty"`
	// endpoint
	Addr string `json:"addr,omitempty"`
	// usage, in nanoseconds
	UserNS   int64 `json:"user_ns,omitempty"`
	SystemNS int64 `json:"system_ns,omitempty"`
	// counters
	Links []netstat.Link `json:"links,omitempty"`
}
