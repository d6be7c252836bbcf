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
	CPUSenderPct     = "cpu_sender_pct"
	CPUReceiverPct   = "cpu_receiver_pct"
	CPUSoftirqPct    = "cpu_softirq_pct"
	CPUSPerGB        = "cpu_s_per_gb"
	CPUUSPerTx       = "cpu_us_per_tx"
	SentBytes        = "sent_bytes"
	ReceivedBytes    = "received_bytes"
	Retransmits      = "tcp_retransmits"
	// The kernel's account of a stream: bytes and frames the receiver's
	// interfaces counted, and the engine's received bytes over the TCP
	// payload those frames carried (1.0 when the two agree exactly).
	WireRxBytes   = "wire_rx_bytes"
	WireRxPackets = "wire_rx_packets"
	AppWireRatio  = "app_wire_ratio"
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
}

// Metrics describes every metric cnbench reports.
var Metrics = map[string]MetricInfo{
	ThroughputBPS:    {"bit/s", true},
	TransactionsPerS: {"1/s", true},
	LatencyP50US:     {"us", false},
	LatencyP90US:     {"us", false},
	LatencyP99US:     {"us", false},
	LatencyP999US:    {"us", false},
	LatencyMeanUS:    {"us", false},
	CPUSenderPct:     {"% of one core", false},
	CPUReceiverPct:   {"% of one core", false},
	CPUSoftirqPct:    {"% of one core", false},
	CPUSPerGB:        {"s/GB", false},
	CPUUSPerTx:       {"us", false},
	SentBytes:        {"B", true},
	ReceivedBytes:    {"B", true},
	Retransmits:      {"segments", false},
	WireRxBytes:      {"B", true},
	WireRxPackets:    {"frames", true},
	AppWireRatio:     {"ratio", true},
}

// PrimaryMetric is the metric a table leads with for a workload.
func PrimaryMetric(workload string) string {
	switch workload {
	case "tcp_rr", "udp_rr":
		return TransactionsPerS
	default:
		return ThroughputBPS
	}
}
