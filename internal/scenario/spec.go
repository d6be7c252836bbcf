// Package scenario reads scenario files, checks them against the names the
// rest of cnbench understands, and expands them into the matrix of cases a
// run executes. It is pure: it touches no network state, so everything here
// is tested without privileges.
package scenario

import (
	"strings"
	"time"
)

// Spec is a validated, fully defaulted scenario.
type Spec struct {
	Name        string
	Description string
	// Duration is the length of one sample; Warmup is an extra run before
	// the samples whose results are thrown away.
	Duration time.Duration
	Warmup   time.Duration
	Samples  int

	Modes      []string
	Topologies []Topology
	Workloads  []Workload
	Engines    []string
	// Placements pin the engines to CPUs (see package placement); the
	// default is [none].
	Placements []string
	// Hosts maps hosts to agents on real machines; empty means every
	// host is emulated on this machine.
	Hosts []Host
	// Swarm is where the swarm:* modes deploy; nil without one.
	Swarm *Swarm

	// File is the path the spec was read from; empty for specs built from
	// flags.
	File string
}

// Topology is one entry of the topologies axis: a topology name and the
// options of its emulated NICs.
type Topology struct {
	Name string
	// NICRate is the tc tbf rate limit of each emulated NIC in canonical tc
	// notation (e.g. "2500mbit"); empty means unlimited. NICRateBPS is the
	// same rate in bits per second.
	NICRate    string
	NICRateBPS int64
	// MTU of the emulated NICs; 0 leaves the kernel default (1500).
	MTU int
	// Offloads of the emulated NICs and veths: "on", "off", or empty for
	// the kernel's default.
	GRO, GSO, TSO, TxChecksum string
}

// toggles are a topology's on/off options, in the order keys and files
// list them.
func (t *Topology) toggles() []struct {
	key   string
	value *string
} {
	return []struct {
		key   string
		value *string
	}{{"gro", &t.GRO}, {"gso", &t.GSO}, {"tso", &t.TSO}, {"tx_checksum", &t.TxChecksum}}
}

// Workload is one entry of the workloads axis. Every list is an axis of its
// own; lists a workload type does not take stay nil.
type Workload struct {
	Type          string
	Flows         []int
	MsgSizes      []int // stream workloads: bytes per write
	RequestSizes  []int // request/response workloads
	ResponseSizes []int // request/response workloads
	// Rates are udp_stream's offered rates per flow, canonical ("1gbit",
	// "100000pps"); nil is unlimited. Clients and Servers are the
	// pattern's endpoint counts; nil is one.
	Rates            []string
	Clients, Servers []int
	Settings
}

// Vocabulary lists the names the caller can actually run. Passing it in
// keeps this package free of anything that touches the network.
type Vocabulary struct {
	Modes, Topologies, Workloads, Engines []string
}

const (
	defaultDuration  = 10 * time.Second
	defaultWarmup    = 2 * time.Second
	defaultSamples   = 5
	defaultEngine    = "native"
	defaultPlacement = "none"
	defaultFlows     = 1
	defaultMsgSize   = 128 << 10
	defaultRRSize    = 64
)

// Limits beyond which a value is almost certainly a typo rather than an
// experiment.
const (
	minDuration = time.Millisecond
	maxDuration = time.Hour
	maxSamples  = 1000
	maxFlows    = 4096
	maxSize     = 64 << 20
	minMTU      = 576
	maxMTU      = 65535
	minRateBPS  = 1_000
	maxRateBPS  = 10_000_000_000_000
	maxCases    = 100_000
	maxNameLen  = 64
)

// workloadKind groups workload types by the parameters they take.
type workloadKind int

const (
	kindPlain  workloadKind = iota // no parameters (e.g. ping)
	kindStream                     // flows, msg_size
	kindRR                         // flows, request_size, response_size
	kindPing                       // msg_size (the echo payload)
)

// kindOf derives the parameter set from the workload's name so a workload
// added to the vocabulary later (udp_stream, tcp_crr) needs no change here.
func kindOf(workload string) workloadKind {
	switch {
	case strings.HasSuffix(workload, "_stream"), workload == "udp_max_rate":
		return kindStream
	case workload == "ping":
		return kindPing
	case strings.HasSuffix(workload, "_rr"), strings.HasSuffix(workload, "_crr"):
		return kindRR
	default:
		return kindPlain
	}
}

// defaultWorkload is a workload of the given type with every parameter at
// its default.
func defaultWorkload(typ string) Workload {
	w := Workload{Type: typ}
	switch kindOf(typ) {
	case kindStream:
		w.Flows = []int{defaultFlows}
		w.MsgSizes = []int{defaultMsgSize}
		if isUDP(typ) {
			w.MsgSizes = []int{defaultUDPSize}
		}
	case kindRR:
		w.Flows = []int{defaultFlows}
		w.RequestSizes = []int{defaultRRSize}
		w.ResponseSizes = []int{defaultRRSize}
	case kindPing:
		w.MsgSizes = []int{defaultPingSize}
		w.Interval = defaultPingInterval
	}
	if typ == "udp_max_rate" {
		w.LossThresholdPct = defaultLossThreshold
	}
	return w
}

// workloadKeys are the keys a workload mapping of this kind may hold.
func workloadKeys(k workloadKind) []string {
	switch k {
	case kindStream:
		return []string{"type", "flows", "msg_size"}
	case kindRR:
		return []string{"type", "flows", "request_size", "response_size"}
	case kindPing:
		return []string{"type", "msg_size"}
	default:
		return []string{"type"}
	}
}
