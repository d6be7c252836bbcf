// Package model holds the result model shared by the runner, the store and
// the reports: runs, cases, samples and the metric names with their units.
// It has no behaviour beyond naming; every other package speaks it.
package model

import (
	"fmt"
	"time"
)

// Status of a case.
type Status string

const (
	StatusOK      Status = "ok"
	StatusSkipped Status = "skipped"
	StatusFailed  Status = "failed"
	// StatusPending marks a case that is stored but not finished yet; a
	// resumed run picks it up again.
	StatusPending Status = "pending"
)

// Params are the parameters of one case beyond its mode, topology and
// workload. Zero values mean "not applicable" and are left out of JSON, so
// a case records only what it used.
type Params struct {
	Flows        int    `json:"flows,omitempty"`
	MsgSize      int    `json:"msg_size,omitempty"`      // bytes per write (stream)
	RequestSize  int    `json:"request_size,omitempty"`  // bytes (rr)
	ResponseSize int    `json:"response_size,omitempty"` // bytes (rr)
	NICRate      string `json:"nic_rate,omitempty"`      // tc tbf rate on emulated NICs, e.g. "1gbit"
	MTU          int    `json:"mtu,omitempty"`
	// Family is the IP version of every address the case's topology and
	// mode assigned: "ipv4", "ipv6" or "dual" (both, traffic over IPv6).
	// Empty in cases stored before it was recorded: IPv4.
	Family string `json:"family,omitempty"`
	// Offloads of the emulated NICs and veths: "on", "off", or empty for
	// the kernel's default.
	GRO        string `json:"gro,omitempty"`
	GSO        string `json:"gso,omitempty"`
	TSO        string `json:"tso,omitempty"`
	TxChecksum string `json:"tx_checksum,omitempty"`
	// Datapath is the Open vSwitch datapath the case used: "system"
	// (the kernel's) or "netdev" (userspace).
	Datapath string `json:"datapath,omitempty"`
	// Accel is how the case's VMs ran: "kvm", or "tcg", qemu's software
	// emulation, whose numbers measure the emulator more than the network.
	Accel string `json:"accel,omitempty"`
	// ModeConfig is what an external network engine was given, as JSON:
	// the CNI configuration of a cni: mode after cnbench's rewriting, the
	// Docker daemon and network settings of a docker: mode, or what a
	// Kubernetes cluster runs (its version, the nodes' kernels, runtimes
	// and kubelets, kube-proxy's mode and the CNI's DaemonSets).
	ModeConfig string `json:"mode_config,omitempty"`
	// ServerNode and ClientNode name the machines (agents' host names) or
	// cluster nodes the server and client endpoints ran on; empty when
	// both ran on this machine's emulated hosts.
	ServerNode string `json:"server_node,omitempty"`
	ClientNode string `json:"client_node,omitempty"`
	// Placement pins the engine processes: "none", "same_core",
	// "different_cores", "same_node", "different_nodes" or "S/R" CPU
	// lists; SenderCPUs and ReceiverCPUs are the CPUs it resolved to.
	Placement    string `json:"placement,omitempty"`
	SenderCPUs   string `json:"sender_cpus,omitempty"`
	ReceiverCPUs string `json:"receiver_cpus,omitempty"`
	// Traffic pattern (study 001): "pairs", "fan_in", "n_to_m",
	// "containers_x_flows" or "all_to_all", with its server and client
	// endpoint counts (all_to_all: Clients endpoints, see Endpoints);
	// Flows are per client endpoint. Empty means one pair.
	Pattern string `json:"pattern,omitempty"`
	Servers int    `json:"servers,omitempty"`
	Clients int    `json:"clients,omitempty"`
	// Engines is how the native engine's processes map to endpoints:
	// EnginesPerHost or EnginesPerEndpoint as the case asked, or as it
	// resolved on this machine; empty is one per endpoint.
	Engines string `json:"engines,omitempty"`
	// Rate is the offered rate per flow of udp_stream, in canonical tc
	// notation ("1gbit") or as packets per second ("100000pps"); empty
	// is unlimited. LossThresholdPct bounds udp_max_rate's search.
	Rate             string  `json:"rate,omitempty"`
	LossThresholdPct float64 `json:"loss_threshold_pct,omitempty"`
	// Ping: echoes per sample (0: as many as the duration holds) and the
	// gap between them; MsgSize is the echo payload.
	Count      int   `json:"count,omitempty"`
	IntervalUS int64 `json:"interval_us,omitempty"`
	// TCP and socket knobs; zero values leave the kernel's defaults.
	// NoDelay is "on" or "off" (TCP_NODELAY), empty for the workload's
	// default (on for request/response, off for streams).
	MSS           int    `json:"mss,omitempty"`
	SendBuffer    int    `json:"send_buffer,omitempty"`
	ReceiveBuffer int    `json:"receive_buffer,omitempty"`
	CC            string `json:"cc,omitempty"`
	NoDelay       string `json:"nodelay,omitempty"`
	DurationMS    int64  `json:"duration_ms,omitempty"`
	WarmupMS      int64  `json:"warmup_ms,omitempty"`
	Samples       int    `json:"samples,omitempty"`
	// With a target confidence interval, sampling goes on past Samples
	// until the primary metric's 95% interval half-width is within
	// TargetCIPct % of its mean, or MaxSamples are taken; the case's
	// Outcome.StoppedBy says which.
	TargetCIPct float64 `json:"target_ci_pct,omitempty"`
	MaxSamples  int     `json:"max_samples,omitempty"`
	// TimeBudgetMS, when positive, ends the sampling of a path (its
	// engines' cases together) once it has its samples and has sampled
	// this long, short of MaxSamples.
	TimeBudgetMS int64 `json:"time_budget_ms,omitempty"`
	// With MaxStealPct, a sample during which the hypervisor took more
	// than this much CPU time (in % of one core) from the machine is
	// taken again, as often as the case has samples to take; the case's
	// Outcome.Retaken counts the samples so dropped.
	MaxStealPct float64 `json:"max_steal_pct,omitempty"`
	// KeepCPUsAwake: the run kept this machine's CPUs from idling with
	// spinners of the lowest priority (package awake), which takes the
	// CPUs' wake-up time out of round trips.
	KeepCPUsAwake bool `json:"keep_cpus_awake,omitempty"`
	// Explain: each sample records every CPU's stacks and attributes them
	// to the path's stages (package explain); Sample.Profile holds them.
	Explain bool `json:"explain,omitempty"`
}

// Traffic patterns (study 001): how many server and client endpoints a
// case places, and which server each client talks to.
const (
	PatternPairs            = "pairs"              // C servers, C clients, client i with server i
	PatternFanIn            = "fan_in"             // 1 server, C clients
	PatternNToM             = "n_to_m"             // N servers, M clients, client i with server i mod N
	PatternContainersXFlows = "containers_x_flows" // 1 server, C clients with F flows each
	PatternAllToAll         = "all_to_all"         // C endpoints, each a client of every other: C servers, C(C-1) clients
)

// How the native engine's processes map to endpoints (Params.Engines).
const (
	// EnginesPerEndpoint runs a process in each endpoint.
	EnginesPerEndpoint = "per_endpoint"
	// EnginesPerHost runs one process for the clients of each host and
	// one for its servers, each opening its sockets in the endpoints'
	// namespaces, where the endpoints are namespaces on this machine.
	EnginesPerHost = "per_host"
)

// EngineLayouts lists the values of Params.Engines a case may ask for.
var EngineLayouts = []string{EnginesPerEndpoint, EnginesPerHost}

// Endpoints on one emulated host (or VM guest): the first
// BaseEndpointsPerHost are numbered in the host's /24, and the modes that
// use one number up to MaxEndpointsPerHost in all from an extension block
// (package topo's address plan).
const (
	BaseEndpointsPerHost = 250
	MaxEndpointsPerHost  = 1250
)

// Endpoints are how many server and client endpoints p's pattern places.
func (p Params) Endpoints() (servers, clients int) {
	clients = max(1, p.Clients)
	switch p.Pattern {
	case PatternFanIn, PatternContainersXFlows:
		return 1, clients
	case PatternNToM:
		return max(1, p.Servers), clients
	case PatternAllToAll:
		k := max(2, p.Clients)
		return k, k * (k - 1)
	}
	return clients, clients
}

// Comparable is p without what only one mode records, such as the OVS
// datapath, so that a mode's case finds its host baseline.
func (p Params) Comparable() Params {
	p.Datapath = ""
	p.ModeConfig = ""
	return p
}

// Case is one point of the scenario's matrix. Its mode, topology,
// workload, engine and Params are what the case was asked to measure;
// Status and Reason say where it stands, from pending to ok, skipped or
// failed; Outcome is what its sampling came to.
type Case struct {
	ID       int64   `json:"-"`
	Index    int     `json:"index"`
	Key      string  `json:"key"` // stable identity of the case within a scenario
	Mode     string  `json:"mode"`
	Topology string  `json:"topology"`
	Workload string  `json:"workload"`
	Engine   string  `json:"engine"`
	Params   Params  `json:"params"`
	Status   Status  `json:"status"`
	Reason   string  `json:"reason,omitempty"`
	Outcome  Outcome `json:"outcome,omitzero"`
}

// Outcome is what sampling a case came to, beside the samples
// themselves. It is written while the case runs, so two cases with the
// same inputs are the same case whatever their outcomes.
type Outcome struct {
	// StoppedBy is the rule that ended sampling past the case's Samples:
	// "target_ci" (Params.TargetCIPct reached), "max_samples", "decided"
	// (the runner's Decide settled the case's path) or "time_budget"
	// (Params.TimeBudgetMS spent). Empty when the case took just its
	// Samples.
	StoppedBy string `json:"stopped_by,omitempty"`
	// Retaken counts the samples taken again because the hypervisor
	// stole more CPU time than Params.MaxStealPct during them.
	Retaken int `json:"retaken,omitempty"`
	// Paired says the case took its samples in turns with the cases that
	// differ from it only in their mode (host among them), so that its
	// sample i and theirs were taken side by side.
	Paired bool `json:"paired,omitempty"`
	// ExplainNote says why a case asked to be explained has no profile
	// (no perf, endpoints this machine's profiler cannot see).
	ExplainNote string `json:"explain_note,omitempty"`
	// The time around the case's samples, in milliseconds: building its
	// path (topology and endpoints; shared with the other engines of the
	// path, which record the same), starting its engines, stopping them
	// and removing the path (shared likewise). Zero where the case did
	// not get that far.
	BuildMS    int64 `json:"build_ms,omitempty"`
	StartMS    int64 `json:"start_ms,omitempty"`
	StopMS     int64 `json:"stop_ms,omitempty"`
	TeardownMS int64 `json:"teardown_ms,omitempty"`
}

// Interval is a slice of a sample, normally one second long.
type Interval struct {
	StartMS int64   `json:"start_ms"` // from the sample's start
	EndMS   int64   `json:"end_ms"`
	Bytes   int64   `json:"bytes,omitempty"`
	BPS     float64 `json:"bps,omitempty"`
	// UDP: datagrams received in the interval and those missing from it.
	Packets int64 `json:"packets,omitempty"`
	Lost    int64 `json:"lost,omitempty"`
	// udp_max_rate: each interval is one trial of the search, at
	// OfferedBPS per flow, with its loss.
	OfferedBPS float64 `json:"offered_bps,omitempty"`
	LossPct    float64 `json:"loss_pct,omitempty"`
}

// Sample is one timed repetition of a case.
type Sample struct {
	Index    int                `json:"index"`
	Started  time.Time          `json:"started"`
	Duration time.Duration      `json:"duration_ns"`
	Values   map[string]float64 `json:"values"`
	// Latency is an HDR histogram of per-transaction latency in
	// nanoseconds, in HdrHistogram's compressed V2 encoding; nil for
	// workloads without transactions. Percentiles are always computed
	// from merged histograms, never by averaging percentiles.
	Latency   []byte     `json:"latency_hdr,omitempty"`
	Intervals []Interval `json:"intervals,omitempty"`
	// Profile is where the machine's CPU time went during the sample, by
	// path stage; nil unless the case was explained (Params.Explain).
	Profile *Profile `json:"profile,omitempty"`
}

// Profile is one sample's CPU time on every CPU of the machine, sampled
// by stack and attributed to the stages of package explain.
type Profile struct {
	// PeriodNS is the CPU time one stack stands for.
	PeriodNS int64 `json:"period_ns"`
	// StagesS is the CPU seconds of each stage, idle and the profiler's
	// own included.
	StagesS map[string]float64 `json:"stages_s"`
	// MachineBusyS is the machine's busy CPU time over the same window by
	// /proc/stat, against which the stages are checked.
	MachineBusyS float64 `json:"machine_busy_s"`
	// MachineStealS is the time the hypervisor took from the machine's
	// CPUs over that window (/proc/stat's steal): the profiler's timer
	// runs on through it, so stacks may stand for it too.
	MachineStealS float64 `json:"machine_steal_s,omitempty"`
	// Units is what a cost per unit divides by: the GB the servers
	// received (streams) or the transactions (request/response), as the
	// sample's cpu_s_per_gb or cpu_us_per_tx do; Unit names it ("GB",
	// "tx").
	Units float64 `json:"units"`
	Unit  string  `json:"unit"`
	// Stacks are the sampled stacks, folded root first
	// ("comm;outer;...;inner"), with the stage each was attributed to.
	Stacks []FoldedStack `json:"stacks,omitempty"`
	// Note says why a sample asked to be profiled has no stacks (perf
	// failed during it).
	Note string `json:"note,omitempty"`
	// Path is the time the measured flows' packets took between the
	// stages of their path, for request/response workloads; nil where it
	// was not traced.
	Path *PathLatency `json:"path,omitempty"`
}

// PathLatency is one sample's time between the stages of the path, per
// direction, from BPF programs on the kernel's tracepoints.
type PathLatency struct {
	Directions []DirectionLatency `json:"directions,omitempty"`
	// Note says why the path was not traced, or why it has no direction.
	Note string `json:"note,omitempty"`
}

// DirectionLatency is the path of one direction's messages: the stages
// most of them passed, in order, and the median time between each stage
// and the next.
type DirectionLatency struct {
	// Direction is "request" (client to server), "response", or
	// "either" where client and server share a namespace and the
	// stages cannot tell the two apart.
	Direction string `json:"direction"`
	// Stages name where a message was seen: "send@client" (TCP starts
	// sending), "tx DEV@SITE" (a device is handed it), "rx DEV@SITE" (a
	// device's receive path has it), "socket@SITE" (the receiving socket
	// is told), "read@SITE" (the application's read returns).
	Stages []string `json:"stages"`
	// GapsUS[i] is the median microseconds from Stages[i] to Stages[i+1].
	GapsUS []float64 `json:"gaps_us"`
	// TotalUS is the median microseconds from the first stage to the last.
	TotalUS float64 `json:"total_us"`
	// MeanUS is their mean (over a case's samples, weighted by messages).
	// Means add up where medians do not: the two ways' means and the
	// endpoints' turnarounds make the mean round trip, even when the
	// reader is sometimes already awake and sometimes woken, and the
	// times split in two groups whose median says little of the sum.
	MeanUS float64 `json:"mean_us"`
	// Over a case's samples, GapsUS and TotalUS are the medians of the
	// samples' medians, and these their lowest and highest: how far the
	// samples spread. Empty in one sample's figures.
	GapsRangeUS  [][2]float64 `json:"gaps_range_us,omitempty"`
	TotalRangeUS *[2]float64  `json:"total_range_us,omitempty"`
	// Messages is how many traced messages took this path; Others how many
	// complete ones took another.
	Messages int `json:"messages"`
	Others   int `json:"others,omitempty"`
}

// FoldedStack is one distinct stack and how many samples had it.
type FoldedStack struct {
	Frames string `json:"f"`
	Stage  string `json:"s"`
	Count  int    `json:"n"`
}

// Environment is the fingerprint of the machine a run was made on.
type Environment struct {
	Hostname  string            `json:"hostname"`
	Kernel    string            `json:"kernel"`
	CPUModel  string            `json:"cpu_model"`
	Cores     int               `json:"cores"`
	NUMANodes int               `json:"numa_nodes"`
	MemoryMB  int64             `json:"memory_mb"`
	Version   string            `json:"cnbench_version"`
	GoVersion string            `json:"go_version"`
	Tools     map[string]string `json:"tools,omitempty"` // tool name -> version line
	// TCPCongestionControl is the congestion control a TCP socket gets
	// unless it chooses one (a workload's cc), in this machine's namespace
	// and in those cnbench makes, which inherit it. Streams move up to
	// twice as fast under one as under another on the same path, and
	// engines that send differently fare differently under BBR's pacing.
	TCPCongestionControl string `json:"tcp_congestion_control,omitempty"`
}

// Run is one execution of a scenario.
type Run struct {
	ID          int64     `json:"id"`
	Scenario    string    `json:"scenario"`      // scenario name
	ScenarioDoc string    `json:"scenario_yaml"` // the expanded scenario as YAML
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished,omitempty"`
	Status      string    `json:"status"` // running, done, interrupted, failed
	Seed        int64     `json:"seed"`
	// Order is how the cases were ordered: OrderShuffled (by Seed) or
	// OrderSequential (as the scenario lists them).
	Order string      `json:"order,omitempty"`
	Env   Environment `json:"environment"`
}

// Orders of a run's cases.
const (
	OrderShuffled   = "shuffled"
	OrderSequential = "sequential"
)

// CaseResult is a case with its stored samples.
type CaseResult struct {
	Case
	Samples []Sample `json:"samples"`
}

// RunResult is everything stored about one run.
type RunResult struct {
	Run   Run          `json:"run"`
	Cases []CaseResult `json:"cases"`
}

// The address families a case's topology numbers in: IPv4 only, IPv6
// only, or both (dual-stack, where traffic takes IPv6).
const (
	FamilyIPv4 = "ipv4"
	FamilyIPv6 = "ipv6"
	FamilyDual = "dual"
)

// ParseFamily reads a family's name; empty is IPv4.
func ParseFamily(s string) (string, error) {
	switch s {
	case "", FamilyIPv4:
		return FamilyIPv4, nil
	case FamilyIPv6, FamilyDual:
		return s, nil
	}
	return "", fmt.Errorf("expected an address family: ipv4, ipv6 or dual, got %q", s)
}

// FamilyHas6 reports whether family f numbers in IPv6 (and so carries
// its traffic over it).
func FamilyHas6(f string) bool { return f == FamilyIPv6 || f == FamilyDual }

// FamilyKey is how a family is written in a topology's key and a
// scenario: IPv4, the default, not at all, so keys stay those of runs
// that had no family.
func FamilyKey(f string) string {
	if f == FamilyIPv4 {
		return ""
	}
	return f
}
