// Package driver runs a case's workload with one traffic engine:
// cnbench's own, or iperf3, sockperf, netperf or ping, one file each,
// all listed in one table. A driver starts what the engine needs in the
// path's sites and, sample by sample, reports what the engine observed
// as a measure.Exchange.
package driver

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"time"

	"cnbench/internal/measure"
	"cnbench/internal/model"
	"cnbench/internal/site"
	"cnbench/internal/workload"
)

// Driver runs a case's workload with one traffic engine between the
// servers and clients of a path. The runner reads the sites' CPU time
// around each exchange and turns the exchange into a sample.
type Driver interface {
	// Exchange runs the workload once for d.
	measure.Exchanger
	// Stop ends every process the driver started.
	Stop() error
}

// Setup is what a driver is built from.
type Setup struct {
	Path *site.Path
	// EngineCommand runs cnbench's own engine on this machine.
	EngineCommand []string
	// ListenPort is the port the native engine's server must listen on,
	// for modes that publish it before the server exists; 0 for any.
	ListenPort int
}

// ErrCannotRun marks a case its engine cannot run; such a case is
// skipped, like one whose mode the machine lacks.
var ErrCannotRun = site.ErrCannotRun

// New builds the driver of a case's engine on its path. A mode that
// published ports before the servers existed had them from Ports.
func New(ctx context.Context, path *site.Path, engineCommand []string, c model.Case) (Driver, error) {
	s := Setup{Path: path, EngineCommand: engineCommand}
	if path.Published {
		s.ListenPort = Ports(c.Engine)[0]
	}
	e, ok := Lookup(c.Engine)
	if !ok {
		return nil, fmt.Errorf("unknown engine %q", c.Engine)
	}
	// What the path refuses (an echo through a ClusterIP) it refuses
	// whichever engine asks.
	for _, site := range append(append([]site.Site{}, path.Servers...), path.Clients...) {
		if err := site.Refuses(c.Workload); err != nil {
			return nil, err
		}
	}
	return e.new(ctx, s, c)
}

// Engine is one traffic engine: how its driver is built, what it needs
// installed, and the ports its server listens on where a mode publishes
// them before the server exists. Which workloads it runs is in their
// rows of the workload table.
type Engine struct {
	Name string
	new  func(ctx context.Context, s Setup, c model.Case) (Driver, error)
	// Programs must be on PATH; none for cnbench's own engine.
	Programs []string
	// Ports of its server, the one clients reach first.
	Ports []int
}

// Table lists the engines, in the order doctor shows them. External
// tools measure one pair of endpoints; only cnbench's own engine adds up
// patterns of many.
var Table = []Engine{
	{Name: "native", new: newNativeDriver, Ports: []int{nativePublishedPort}},
	{Name: "iperf3", new: onePair(newIperf3Driver), Programs: []string{"iperf3"}, Ports: []int{iperf3Port}},
	{Name: "sockperf", new: onePair(newSockperfDriver), Programs: []string{"sockperf"}, Ports: []int{sockperfPort}},
	{Name: "ping", new: onePair(newPingDriver), Programs: []string{"ping"}, Ports: []int{nativePublishedPort}},
	{Name: "netperf", new: onePair(newNetperfDriver), Programs: []string{"netperf", "netserver"}, Ports: []int{netperfControlPort, netperfDataPort}},
}

// nativePublishedPort is where the native engine's server listens in
// modes that publish its port before it exists (docker run -p, CNI
// portmap).
const nativePublishedPort = 5301

// Lookup finds an engine by name.
func Lookup(name string) (Engine, bool) {
	i := slices.IndexFunc(Table, func(e Engine) bool { return e.Name == name })
	if i < 0 {
		return Engine{}, false
	}
	return Table[i], true
}

// Names are the engines' names, in the table's order.
func Names() []string {
	names := make([]string, len(Table))
	for i, e := range Table {
		names[i] = e.Name
	}
	return names
}

// Ports are the ports an engine's server listens on in modes that
// publish them before it exists; the first is the one it is reached at.
func Ports(engine string) []int {
	e, _ := Lookup(engine)
	return e.Ports
}

// AllPorts are the ports of every engine in engines, for a mode to
// publish.
func AllPorts(engines []string) []int {
	var ports []int
	for _, e := range engines {
		ports = append(ports, Ports(e)...)
	}
	return ports
}

// Available returns nil if the engine's programs are installed.
func Available(engine string) error {
	e, _ := Lookup(engine)
	for _, p := range e.Programs {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%w: %s is not installed", ErrCannotRun, p)
		}
	}
	return nil
}

// Supports reports whether an engine can run a workload; a case whose
// engine cannot is skipped.
func Supports(engine, name string) error {
	e, ok := Lookup(engine)
	if !ok {
		return fmt.Errorf("unknown engine %q", engine)
	}
	if err := Available(engine); err != nil {
		return err
	}
	if can := workload.ByEngine()[engine]; e.Name != "native" && !slices.Contains(can, name) {
		return fmt.Errorf("%w: %s does not run %s (it runs %s)", ErrCannotRun, engine, name, strings.Join(can, ", "))
	}
	return nil
}

// onePair limits an external tool's driver to one server and one client
// endpoint: the tools measure one path, and only cnbench's own engine
// adds up patterns of many.
func onePair(newDriver func(context.Context, Setup, model.Case) (Driver, error)) func(context.Context, Setup, model.Case) (Driver, error) {
	return func(ctx context.Context, s Setup, c model.Case) (Driver, error) {
		if p := s.Path; p.Multi() {
			return nil, fmt.Errorf("%w: %s runs one pair of endpoints; pattern %s places %d servers and %d clients",
				ErrCannotRun, c.Engine, c.Params.Pattern, len(p.Servers), len(p.Clients))
		}
		return newDriver(ctx, s, c)
	}
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
func startToolServer(ctx context.Context, s Setup, args []string, proto string, port int) (*site.Proc, netip.AddrPort, error) {
	server := s.Path.Server()
	srv, err := server.Start(args, nil)
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	if err := server.WaitListening(ctx, proto, port, 5*time.Second); err != nil {
		srv.StopWithin(0)
		return nil, netip.AddrPort{}, srv.Describe(err)
	}
	target, err := s.Path.Expose(server, port)
	if err != nil {
		srv.StopWithin(0)
		return nil, netip.AddrPort{}, err
	}
	return srv, target, nil
}

// wholeSeconds rounds a sample duration up to whole seconds, the only
// durations iperf3 and sockperf accept.
func wholeSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}
