// Command scale measures how cnbench's costs grow with the size of a
// case, along three axes, one case per point:
//
//   - endpoints: a fan-in of N endpoints (N-1 clients and their server)
//     on one host, bridge mode (-endpoints 2,10,100,1000);
//   - flows: F tcp_stream flows in all into one server, bridge on one
//     host (-flows 1,16,256,1024,4096): containers x flows, up to 16 flows
//     from each client (-per-client), so 1024 flows are 64 clients of 16,
//     with samples of -flow-duration (10 s: the target below is about
//     them);
//   - hosts: the pairs pattern of H endpoint pairs over switch:H, one
//     client and one server on each host, each client sending to the next
//     host's server, through the VXLAN overlay (-hosts 2,4,...,64).
//
// The endpoint and flow axes run once for each layout of the native
// engine's processes in -engines (per_endpoint: one in each endpoint;
// per_host: one for a host's clients and one for its servers), side by
// side; the host axis has one client and one server per host, where both
// layouts are the same.
//
// For each point it reports the time around the sample (building the path,
// starting the engines, stopping them, removing the path, as the runner
// records them), the runner's and the engines' peak memory, the aggregate
// throughput, CPU-seconds per GB and Jain's fairness over the flows; for
// each figure, its growth exponent along the axis (the slope of log y
// against log x: 1 grows in proportion, 0 not at all). It then checks two
// targets: setup per endpoint at the largest endpoint count within 1.5x of
// that at 10, and the time around a sample of 1024 flows below the
// sample itself. -plots DIR draws each axis's figures on log-log axes.
//
// Run it as root on a quiet machine: go run ./bench/scale
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"cnbench/bench/benchkit"
	"cnbench/internal/model"
	"cnbench/internal/runner"
	"cnbench/internal/store"
)

// settings are the bench's flags.
type settings struct {
	endpoints, flows, hosts []int
	layouts                 []string
	perClient               int
	duration, flowDuration  time.Duration
	plots                   string
}

func main() {
	// This binary is also the native engine the runner starts.
	benchkit.ServeEngineIfAsked()
	var s settings
	endpoints := flag.String("endpoints", "2,10,100,1000", "endpoint counts of the fan-in on one host (bridge holds up to 1023)")
	flows := flag.String("flows", "1,16,256,1024,4096", "flow counts in all of the containers x flows stream")
	flag.IntVar(&s.perClient, "per-client", 16, "flows from each client of the flow points")
	hosts := flag.String("hosts", "2,4,8,16,32,64", "host counts of switch:H, one endpoint pair on each")
	flag.DurationVar(&s.duration, "duration", 2*time.Second, "sample length of the endpoint and host points")
	flag.DurationVar(&s.flowDuration, "flow-duration", 10*time.Second, "sample length of the flow points")
	flag.StringVar(&s.plots, "plots", "", "draw each axis's figures as PNG files in this directory")
	layouts := flag.String("engines", "per_endpoint,per_host", "layouts of the engine processes to run the endpoint and flow axes in")
	flag.Parse()
	var errs []error
	for _, l := range strings.Split(*layouts, ",") {
		if !slices.Contains(model.EngineLayouts, l) {
			errs = append(errs, fmt.Errorf("-engines: %q is not one of %s", l, strings.Join(model.EngineLayouts, ", ")))
		}
		s.layouts = append(s.layouts, l)
	}
	s.endpoints, errs = ints("-endpoints", *endpoints, 2, 1023, errs)
	s.flows, errs = ints("-flows", *flows, 1, 4096, errs)
	s.hosts, errs = ints("-hosts", *hosts, 2, 64, errs)
	if s.perClient < 1 || s.perClient > 4096 {
		errs = append(errs, fmt.Errorf("-per-client: %d is not from 1 to 4096", s.perClient))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(2)
	}
	ctx, stop := benchkit.SignalContext()
	err := run(ctx, s)
	stop()
	benchkit.Exit(ctx, "scale", err)
}

// ints parses a comma list of whole numbers within [lo, hi].
func ints(flag, list string, lo, hi int, errs []error) ([]int, []error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			return nil, append(errs, fmt.Errorf("%s: %q is not a whole number from %d to %d", flag, f, lo, hi))
		}
		out = append(out, n)
	}
	return out, errs
}

// axis is one sweep: its points' scenario documents by x. kind is the
// axis, name the sweep (the axis, and the engines' layout where the
// sweep has one).
type axis struct {
	kind, name, unit string
	xs               []int
	doc              func(x int) string
}

func axes(s settings) []axis {
	var out []axis
	for _, layout := range s.layouts {
		engines := ", engines: " + layout
		out = append(out, axis{"endpoints", "endpoints-" + layout, "endpoints on one host", s.endpoints, func(n int) string {
			return pointDoc("endpoints", s.duration, "bridge", "chc", fmt.Sprintf("pattern: fan_in, clients: %d%s", n-1, engines))
		}})
	}
	for _, layout := range s.layouts {
		engines := ", engines: " + layout
		out = append(out, axis{"flows", "flows-" + layout, "flows in all", s.flows, func(f int) string {
			perClient := min(f, s.perClient)
			return pointDoc("flows", s.flowDuration, "bridge", "chc",
				fmt.Sprintf("pattern: containers_x_flows, clients: %d, flows: %d%s", (f+perClient-1)/perClient, perClient, engines))
		}})
	}
	return append(out, axis{"hosts", "hosts", "hosts on one switch", s.hosts, func(h int) string {
		return pointDoc("hosts", s.duration, "overlay", fmt.Sprintf("switch:%d", h), fmt.Sprintf("clients: %d", h))
	}})
}

// pointDoc is the scenario of one point: one sample of a tcp_stream with
// the given pattern keys, in one mode and topology.
func pointDoc(axis string, sample time.Duration, mode, topology, pattern string) string {
	return fmt.Sprintf(`name: scale-%s
duration: %dms
warmup: 500ms
samples: 1
modes: [%s]
topologies: [%s]
workloads:
  - {type: tcp_stream, %s}
`, axis, sample.Milliseconds(), mode, topology, pattern)
}

func run(ctx context.Context, s settings) error {
	st, done, err := benchkit.TempStore()
	if err != nil {
		return err
	}
	defer done()
	var results []sweep
	for _, a := range axes(s) {
		sw := sweep{axis: a}
		for _, x := range a.xs {
			fmt.Fprintf(os.Stderr, "scale: %s = %d\n", a.name, x)
			p, err := measurePoint(ctx, st, a, x)
			if err != nil {
				return fmt.Errorf("%s = %d: %w", a.name, x, err)
			}
			sw.points = append(sw.points, p)
		}
		results = append(results, sw)
		printSweep(os.Stdout, sw)
	}
	ok := printTargets(os.Stdout, results, s.flowDuration)
	if s.plots != "" {
		if err := drawSweeps(s.plots, results); err != nil {
			return err
		}
	}
	if !ok {
		return errors.New("a growth target missed")
	}
	return nil
}

// measurePoint runs one point's case and reads its figures.
func measurePoint(ctx context.Context, st *store.Store, a axis, x int) (point, error) {
	mem, err := watchMemory()
	if err != nil {
		return point{}, err
	}
	res, runErr := benchkit.Run(ctx, st, "scale-"+a.kind, a.doc(x), runner.Options{})
	runnerMB, enginesMB := mem.stop()
	if runErr != nil {
		return point{}, runErr
	}
	c := res.Cases[0]
	if c.Status != "ok" {
		return point{}, fmt.Errorf("case %s: %s", c.Status, c.Reason)
	}
	p := point{x: x, runnerMB: runnerMB, enginesMB: enginesMB}
	p.fill(c)
	return p, nil
}
