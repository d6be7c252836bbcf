package runner

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"cnbench/internal/model"
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
	latencyHDR   []byte
	// Latency percentiles in microseconds, for engines that report them
	// without a histogram.
	latencyUS map[string]float64
	// retransmits, when known.
	retransmits      int64
	retransmitsKnown bool
}

// driverSetup is what a driver is built from.
type driverSetup struct {
	server, client *slot
	// expose publishes a port of the server endpoint and returns the
	// address the client dials.
	expose        func(port int) (netip.AddrPort, error)
	engineCommand []string
}

// drivers maps each engine name to its constructor.
var drivers = map[string]func(ctx context.Context, s driverSetup, c model.Case) (driver, error){
	"native": newNativeDriver,
}

// Engines that generate traffic, in the order doctor shows them.
var Engines = []string{"native"}

// Workloads the runner can measure.
var Workloads = []string{"tcp_stream", "tcp_rr"}

// engineSupports reports whether an engine can run a workload; a case
// whose engine cannot is skipped.
func engineSupports(engine, workload string) error {
	if _, ok := drivers[engine]; !ok {
		return fmt.Errorf("unknown engine %q", engine)
	}
	return nil
}
