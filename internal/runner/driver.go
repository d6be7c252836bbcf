package runner

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"time"

	"cnbench/internal/model"
	"cnbench/internal/workload"
)

// A driver runs a case's workload with one traffic engine between a
// server slot and a client slot. The runner reads both slots' CPU time
// around each exchange and turns the exchange into a sample.
type driver interface {
	// exchange runs the workload once for d.
	exchange(ctx context.Context, c model.Case, d time.Duration) (exchange, error)
	// stop ends every process the driver started.
	stop() error
}

// exchange is what a driver observed in one run of a workload. Zero
// fields were not observed.
type exchange struct {
	// Streams: bytes the sender wrote and the receiver read, and the
	// receiver's time from first to last byte.
	sentBytes, receivedBytes int64
	receiveTime              time.Duration
	intervals                []model.Interval
	// Request/response: completed transactions in txTime, and their
	// latency as an HDR histogram (compressed V2 encoding, nanoseconds).
	transactions int64
	txTime       time.Duration
	// cpuTransactions, when set, are the transactions the processes'
	// whole CPU time paid for, where the tool measured only some of them
	// (sockperf drops its warm-up).
	cpuTransactions int64
	// activeTime, when set, is how long traffic flowed, where the tool
	// idled for a noticeable part of the sample (sockperf waits 2 s
	// before it starts). The processes' CPU and softirq percentages are
	// over this time, so that they compare with those of an engine that
	// was busy throughout; steal, the hypervisor's, is over the sample.
	activeTime time.Duration
	latencyHDR []byte
	// Latency percentiles in microseconds, for engines that report them
	// without a histogram.
	latencyUS map[string]float64
	// retransmits, when known.
	retransmits      int64
	retransmitsKnown bool
	// more holds what the workloads beyond tcp_stream and tcp_rr, and
	// the traffic patterns, observed; nil for those two in one pair.
	more *moreExchange
}

// driverSetup is what a driver is built from.
type driverSetup struct {
	server, client *slot
	// expose publishes a port of the server endpoint and returns the
	// address the client dials.
	expose        func(port int) (netip.AddrPort, error)
	engineCommand []string
	// listenPort is the port the native engine's server must listen on,
	// for modes that publish it before the server exists; 0 for any.
	listenPort int
}

// transactionsForCPU are the transactions to charge the exchange's CPU
// time to.
func (x exchange) transactionsForCPU() int64 {
	if x.cpuTransactions > 0 {
		return x.cpuTransactions
	}
	return x.transactions
}

// busyTime is the time to spread the sample's CPU time over: the time
// traffic flowed, where the exchange knows it, else the whole sample.
func (x exchange) busyTime(wall time.Duration) time.Duration {
	if x.activeTime > 0 && x.activeTime < wall {
		return x.activeTime
	}
	return wall
}

// drivers maps each engine name to its constructor.
var drivers = map[string]func(ctx context.Context, s driverSetup, c model.Case) (driver, error){
	"native":   newNativeDriver,
	"iperf3":   onePair(newIperf3Driver),
	"sockperf": onePair(newSockperfDriver),
	"ping":     onePair(newPingDriver),
	"netperf":  onePair(newNetperfDriver),
}

// Engines that generate traffic, in the order doctor shows them.
var Engines = []string{"native", "iperf3", "sockperf", "ping", "netperf"}

// engineWorkloads lists what each engine can run; "native" runs all.
var engineWorkloads = workload.ByEngine()

// enginePrograms lists the programs an engine needs where they are more
// than the one named after it.
var enginePrograms = map[string][]string{"netperf": {"netperf", "netserver"}}

// errEngineCannot marks a case its engine cannot run; such a case is
// skipped, like one whose mode the machine lacks.
var errEngineCannot = errors.New("the engine cannot run this case")

// EngineAvailable returns nil if the engine's program is installed.
func EngineAvailable(engine string) error {
	if engine == "native" {
		return nil
	}
	programs, ok := enginePrograms[engine]
	if !ok {
		programs = []string{engine}
	}
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%w: %s is not installed", errEngineCannot, p)
		}
	}
	return nil
}

// Workloads the runner can measure.
var Workloads = workload.Names()

// engineSupports reports whether an engine can run a workload; a case
// whose engine cannot is skipped.
func engineSupports(engine, workload string) error {
	if _, ok := drivers[engine]; !ok {
		return fmt.Errorf("unknown engine %q", engine)
	}
	if err := EngineAvailable(engine); err != nil {
		return err
	}
	if can, listed := engineWorkloads[engine]; listed && !slices.Contains(can, workload) {
		return fmt.Errorf("%w: %s does not run %s (it runs %s)", errEngineCannot, engine, workload, strings.Join(can, ", "))
	}
	return nil
}

// reportedLatency is the latency metrics of a tool that reports its
// round trips as a mean and percentiles (keyed 50, 99.9, ...), in
// microseconds, rather than as a histogram.
func reportedLatency(meanUS float64, percentilesUS map[float64]float64) map[string]float64 {
	lat := map[string]float64{model.LatencyMeanUS: meanUS}
	for _, q := range model.LatencyPercentiles {
		if v, ok := percentilesUS[q.Quantile]; ok {
			lat[q.Name] = v
		}
	}
	return lat
}

// startToolServer starts an external tool's server in the server slot,
// waits until it listens on port (proto "tcp" or "udp"), and exposes the
// port; it returns the server process and the address clients dial.
func startToolServer(ctx context.Context, s driverSetup, args []string, proto string, port int) (*proc, netip.AddrPort, error) {
	srv, err := s.server.start(args, nil)
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	if err := waitListening(ctx, s.server.ep.NS, proto, port, 5*time.Second); err != nil {
		srv.stopWithin(0)
		return nil, netip.AddrPort{}, srv.describe(err)
	}
	target, err := s.expose(port)
	if err != nil {
		srv.stopWithin(0)
		return nil, netip.AddrPort{}, err
	}
	return srv, target, nil
}
