// Package scenario reads scenario files, checks them against the names the
// rest of cnbench understands, and expands them into the matrix of cases a
// run executes. It is pure: it touches no network state, so everything here
// is tested without privileges.
package scenario

import (
	"slices"
	"time"

	"gopkg.in/yaml.v3"

	"cnbench/internal/model"
	"cnbench/internal/workload"
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
	// Kubernetes is where the k8s:* modes deploy; nil without one.
	Kubernetes *Kubernetes
	// Explain profiles every sample by path stage (package explain).
	Explain bool

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
	// Family is the IP version of every address: "ipv6" or "dual";
	// empty is IPv4.
	Family string
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
	// BusiestHost is the most endpoints a case of params p places on one
	// host of a topology, for the bound on endpoints per host; nil takes
	// every topology to put them all on one, which never passes a case
	// the run would refuse.
	BusiestHost func(topology string, p model.Params) int
	// CheckTopology refuses a topology name the list admits by its
	// pattern (switch:N) but the run cannot build; nil refuses none.
	CheckTopology func(topology string) error
	// EndpointsPerHost is how many endpoints a mode places on one host of
	// a topology; nil takes every mode to hold model.BaseEndpointsPerHost.
	EndpointsPerHost func(mode, topology string) int
	// TopologyAliases maps other names for topologies to theirs; a case
	// records the topology's own name.
	TopologyAliases map[string]string
}

// topologyName is the topology an alias stands for, or name itself.
func (v Vocabulary) topologyName(name string) string {
	if real, ok := v.TopologyAliases[name]; ok {
		return real
	}
	return name
}

// topologyMessage says what is wrong with a topology's name, or "".
func (v Vocabulary) topologyMessage(name string) string {
	if msg := checkWord("topology", name, v.Topologies); msg != "" {
		return msg
	}
	if v.CheckTopology != nil {
		if err := v.CheckTopology(name); err != nil {
			return err.Error()
		}
	}
	return ""
}

const (
	defaultDuration  = 10 * time.Second
	defaultWarmup    = 2 * time.Second
	defaultSamples   = 5
	defaultEngine    = "native"
	defaultPlacement = "none"
)

// Limits beyond which a value is almost certainly a typo rather than an
// experiment.
const (
	minDuration = time.Millisecond
	maxDuration = time.Hour
	maxSamples  = 1000
	maxFlows    = 4096
	maxSize     = workload.MaxMessageSize
	minMTU      = 576
	maxMTU      = 65535
	minRateBPS  = 1_000
	maxRateBPS  = 10_000_000_000_000
	maxCases    = 100_000
	maxNameLen  = 64
)

// axis is how a Workload holds one of the flow and size axes a workload
// row may list, and how a case's params carry its value.
type axis struct {
	key string
	// values is the workload's list for the axis.
	values func(w *Workload) *[]int
	// param is the field of a case's params the axis sets.
	param func(p *model.Params) *int
	// fallback is the row's default for the axis.
	fallback func(d workload.Defaults) int
	// node renders one value in a document.
	node func(int) *yaml.Node
}

var axes = []axis{
	{workload.KeyFlows, func(w *Workload) *[]int { return &w.Flows }, func(p *model.Params) *int { return &p.Flows },
		func(d workload.Defaults) int { return d.Flows }, scalarNode[int]},
	{workload.KeyMsgSize, func(w *Workload) *[]int { return &w.MsgSizes }, func(p *model.Params) *int { return &p.MsgSize },
		func(d workload.Defaults) int { return d.MsgSize }, sizeNode},
	{workload.KeyRequestSize, func(w *Workload) *[]int { return &w.RequestSizes }, func(p *model.Params) *int { return &p.RequestSize },
		func(d workload.Defaults) int { return d.RequestSize }, sizeNode},
	{workload.KeyResponseSize, func(w *Workload) *[]int { return &w.ResponseSizes }, func(p *model.Params) *int { return &p.ResponseSize },
		func(d workload.Defaults) int { return d.ResponseSize }, sizeNode},
}

// axesOf are the axes a workload's row lists, in its order.
func axesOf(typ string) []axis {
	var out []axis
	for _, key := range workload.Get(typ).Axes {
		if i := slices.IndexFunc(axes, func(a axis) bool { return a.key == key }); i >= 0 {
			out = append(out, axes[i])
		}
	}
	return out
}

// defaultWorkload is a workload of the given type with every parameter at
// its row's default.
func defaultWorkload(typ string) Workload {
	d := workload.Get(typ).Defaults
	w := Workload{Type: typ}
	w.Interval, w.LossThresholdPct = d.Interval, d.LossThresholdPct
	for _, a := range axesOf(typ) {
		*a.values(&w) = []int{a.fallback(d)}
	}
	return w
}

// workloadKeys are the keys a workload mapping of this type may hold.
func workloadKeys(typ string) []string {
	r := workload.Get(typ)
	return slices.Concat([]string{"type"}, r.Axes, r.Knobs)
}
