package model

// Metric names carry their unit, in snake_case; the JSON report and the
// store use exactly these strings.
const (
	ThroughputBPS    = "throughput_bps"
	TransactionsPerS = "transactions_per_s"
	LatencyP50US     = "latency_p50_us"
	LatencyP90US     = "latency_p90_us"
	LatencyP99US     = "latency_p99_us"
	LatencyP999US    = "latency_p999_us"
	LatencyMeanUS    = "latency_mean_us"
	// CPU, each in % of one core over the sample's busy time: the time
	// between the readings taken before and after the exchange (the
	// sample's duration), or, for an engine that idled part of it
	// (sockperf), the time its traffic flowed.
	//
	// Sender and receiver: user + system time of every process started
	// in the client (sender) and server (receiver) endpoints' cgroups,
	// all their threads, precise from the cgroup's cpu.stat or cpuacct.
	// On a kernel without IRQ time accounting that includes the softirq
	// work the kernel did on top of those processes (for a veth, most of
	// the receive path, inside the sender's send calls).
	CPUSenderPct   = "cpu_sender_pct"
	CPUReceiverPct = "cpu_receiver_pct"
	// Softirq: the machine's softirq time on all CPUs from /proc/stat,
	// whoever it ran for and whatever it ran on top of; on a kernel
	// without IRQ time accounting partly also in sender and receiver.
	CPUSoftirqPct = "cpu_softirq_pct"
	// The machine's account, where every endpoint runs on this machine:
	// its busy time on all CPUs from /proc/stat (user, nice, system,
	// irq, softirq; not idle, iowait or steal), the softirq time no
	// endpoint's cgroup was charged (all of it with IRQ time accounting,
	// else the ksoftirqd threads' time), and the rest of the machine's
	// busy time (the runner, other processes, softirq on top of them),
	// so that sender + receiver + softirq apart + other = machine.
	CPUMachinePct      = "cpu_machine_pct"
	CPUSoftirqApartPct = "cpu_softirq_apart_pct"
	CPUOtherPct        = "cpu_other_pct"
	// Steal: what the hypervisor ran elsewhere, over the time traffic
	// flowed.
	CPUStealPct = "cpu_steal_pct"
	// Sender + receiver CPU-seconds, over the same readings, per
	// gigabyte received (streams) or in microseconds per transaction:
	// cpu_s_per_gb × received_bytes / 1e9 / busy time is the cores that
	// cpu_sender_pct + cpu_receiver_pct report.
	CPUSPerGB     = "cpu_s_per_gb"
	CPUUSPerTx    = "cpu_us_per_tx"
	SentBytes     = "sent_bytes"
	ReceivedBytes = "received_bytes"
	Retransmits   = "tcp_retransmits"
	// RetransmittedBytes is the payload of the retransmits, where the
	// engine knows it (the native engine's TCP_INFO; iperf3's count times
	// its MSS).
	RetransmittedBytes = "tcp_retransmitted_bytes"
	// The kernel's account of a stream: bytes and frames the receiver's
	// interfaces counted, and the engine's received bytes over the TCP
	// payload those frames carried, less the retransmitted payload where
	// it is known (1.0 when the two agree exactly).
	WireRxBytes   = "wire_rx_bytes"
	WireRxPackets = "wire_rx_packets"
	AppWireRatio  = "app_wire_ratio"
	// Patterns: the mean throughput of one client endpoint, and Jain's
	// fairness index over the client endpoints (1 when all got the same).
	ThroughputPerEndpointBPS = "throughput_per_endpoint_bps"
	FairnessJain             = "fairness_jain"
	// Streams of several flows: the slowest, median and fastest flow's
	// throughput, and Jain's fairness index over all the flows.
	FlowThroughputMinBPS    = "flow_throughput_min_bps"
	FlowThroughputP10BPS    = "flow_throughput_p10_bps"
	FlowThroughputMedianBPS = "flow_throughput_median_bps"
	FlowThroughputP90BPS    = "flow_throughput_p90_bps"
	FlowThroughputMaxBPS    = "flow_throughput_max_bps"
	FlowFairnessJain        = "flow_fairness_jain"
	// UDP: loss over the datagrams sent (udp_stream) or the transactions
	// tried (udp_rr), reordered arrivals, RFC 3550 interarrival jitter.
	LossPct    = "loss_pct"
	JitterUS   = "jitter_us"
	OutOfOrder = "out_of_order"
	// SentPackets and ReceivedPackets are datagrams or echoes.
	SentPackets     = "sent_packets"
	ReceivedPackets = "received_packets"
	// udp_max_rate: the highest offered rate (all flows together) whose
	// loss stayed below the threshold, and the trials it took.
	MaxRateBPS = "max_rate_bps"
	Trials     = "trials"
	// tcp_crr: connections opened, used and closed per second.
	ConnectionsPerS = "connections_per_s"
	// ping round trips.
	RTTMinUS  = "rtt_min_us"
	RTTAvgUS  = "rtt_avg_us"
	RTTMaxUS  = "rtt_max_us"
	RTTMdevUS = "rtt_mdev_us"
	// The kernel's own UDP counters in the receiver's namespace
	// (/proc/net/snmp): datagrams dropped for a full receive buffer, and
	// datagrams delivered to sockets there.
	UDPRcvbufErrors = "udp_rcvbuf_errors"
	UDPInDatagrams  = "udp_in_datagrams"
	// udp_rr: the requests the kernel did not deliver to the server's
	// sockets over those the client sent, in %, from udp_in_datagrams; the
	// loss the engine reports (loss_pct) is held to it.
	UDPKernelLossPct = "udp_kernel_loss_pct"
)

// LatencyPercentiles maps each latency percentile metric to its quantile.
var LatencyPercentiles = []struct {
	Name     string
	Quantile float64
}{
	{LatencyP50US, 50}, {LatencyP90US, 90}, {LatencyP99US, 99}, {LatencyP999US, 99.9},
}

// MetricInfo says how to read a metric.
type MetricInfo struct {
	Unit string
	// HigherIsBetter orients overheads and comparisons.
	HigherIsBetter bool
	// Quantity names what the metric measures, for labels: "throughput",
	// "p99 latency".
	Quantity string
}

// Metrics describes every metric cnbench reports.
var Metrics = map[string]MetricInfo{
	ThroughputBPS:      {"bit/s", true, "throughput"},
	TransactionsPerS:   {"1/s", true, "transaction rate"},
	LatencyP50US:       {"us", false, "p50 latency"},
	LatencyP90US:       {"us", false, "p90 latency"},
	LatencyP99US:       {"us", false, "p99 latency"},
	LatencyP999US:      {"us", false, "p99.9 latency"},
	LatencyMeanUS:      {"us", false, "mean latency"},
	CPUSenderPct:       {"% of one core", false, "sender CPU"},
	CPUReceiverPct:     {"% of one core", false, "receiver CPU"},
	CPUSoftirqPct:      {"% of one core", false, "softirq CPU"},
	CPUMachinePct:      {"% of one core", false, "machine CPU"},
	CPUSoftirqApartPct: {"% of one core", false, "softirq CPU apart from the endpoints"},
	CPUOtherPct:        {"% of one core", false, "other CPU"},
	CPUStealPct:        {"% of one core", false, "stolen CPU"},
	CPUSPerGB:          {"s/GB", false, "stream CPU cost"},
	CPUUSPerTx:         {"us", false, "CPU time per transaction"},
	SentBytes:          {"B", true, "bytes sent"},
	ReceivedBytes:      {"B", true, "bytes received"},
	Retransmits:        {"segments", false, "retransmitted segments"},
	RetransmittedBytes: {"B", false, "retransmitted bytes"},
	WireRxBytes:        {"B", true, "bytes on the wire"},
	WireRxPackets:      {"frames", true, "frames on the wire"},
	AppWireRatio:       {"ratio", true, "received bytes over wire payload"},

	ThroughputPerEndpointBPS: {"bit/s", true, "throughput per endpoint"},
	FairnessJain:             {"index", true, "Jain's fairness"},
	FlowThroughputMinBPS:     {"bit/s", true, "slowest flow's throughput"},
	FlowThroughputP10BPS:     {"bit/s", true, "10th percentile flow's throughput"},
	FlowThroughputMedianBPS:  {"bit/s", true, "median flow's throughput"},
	FlowThroughputP90BPS:     {"bit/s", true, "90th percentile flow's throughput"},
	FlowThroughputMaxBPS:     {"bit/s", true, "fastest flow's throughput"},
	FlowFairnessJain:         {"index", true, "Jain's fairness over flows"},
	LossPct:                  {"%", false, "loss"},
	JitterUS:                 {"us", false, "jitter"},
	OutOfOrder:               {"datagrams", false, "out-of-order datagrams"},
	SentPackets:              {"packets", true, "packets sent"},
	ReceivedPackets:          {"packets", true, "packets received"},
	MaxRateBPS:               {"bit/s", true, "max rate"},
	Trials:                   {"trials", false, "trials"},
	ConnectionsPerS:          {"1/s", true, "connection rate"},
	RTTMinUS:                 {"us", false, "minimum round trip"},
	RTTAvgUS:                 {"us", false, "mean round trip"},
	RTTMaxUS:                 {"us", false, "maximum round trip"},
	RTTMdevUS:                {"us", false, "round-trip deviation"},
	UDPRcvbufErrors:          {"datagrams", false, "receive buffer drops"},
	UDPInDatagrams:           {"datagrams", true, "datagrams delivered"},
	UDPKernelLossPct:         {"%", false, "loss by the kernel's counters"},
}
