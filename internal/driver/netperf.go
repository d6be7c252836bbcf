package driver

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cnbench/internal/measure"
	"cnbench/internal/model"
	"cnbench/internal/site"
	"cnbench/internal/tools"
	"cnbench/internal/units"
)

// netperf talks to netserver on a control port and opens its data
// connection to a second port. Both are fixed, so that modes which
// publish ports (NAT, docker run -p, CNI portmap) can publish them.
const (
	netperfControlPort = 12865
	netperfDataPort    = 12866
)

// netperfTests maps each workload to netperf's test.
var netperfTests = map[string]string{
	"tcp_stream": "TCP_STREAM",
	"udp_stream": "UDP_STREAM",
	"tcp_rr":     "TCP_RR",
	"tcp_crr":    "TCP_CRR",
	"udp_rr":     "UDP_RR",
}

// netperfDriver runs netperf: a netserver that stays up for the whole
// case and forks a child per test, and one netperf client run per
// sample, whose keyval output is parsed.
type netperfDriver struct {
	server *site.Proc
	client site.Site
	target string
	port   string
	// version is netperf's -4 or -6, as target is.
	version string
	// test is the case's test and its test-specific flags.
	test []string
}

func newNetperfDriver(ctx context.Context, s Setup, c model.Case) (Driver, error) {
	test, err := netperfArgs(c)
	if err != nil {
		return nil, err
	}
	addr := s.Path.Server().Endpoint().Addr
	family := "inet"
	if addr.Is6() {
		family = "inet6"
	}
	// -D: stay in the foreground, a child of its site. -f: serve each
	// test itself rather than from a child, which netserver never reaps
	// (it ignores SIGCHLD): where no cgroup holds the server's processes
	// (an agent in a pod), an ended child's CPU time would be lost.
	args := []string{"netserver", "-D", "-f", "-L", addr.String() + "," + family, "-p", strconv.Itoa(netperfControlPort)}
	srv, target, err := startToolServer(ctx, s, args, "tcp", netperfControlPort)
	if err != nil {
		return nil, err
	}
	// The client dials the data port at the address it reaches the
	// control port at; a mode must publish it under the same number.
	data, err := s.Path.Expose(s.Path.Server(), netperfDataPort)
	if err == nil && (data.Addr() != target.Addr() || data.Port() != netperfDataPort) {
		err = fmt.Errorf("%w: netperf needs its data port %d reachable at %s:%d, where the control port is; the mode gives %s",
			ErrCannotRun, netperfDataPort, target.Addr(), netperfDataPort, data)
	}
	if err != nil {
		srv.StopWithin(0)
		return nil, err
	}
	version := "-4"
	if target.Addr().Is6() {
		version = "-6"
	}
	return &netperfDriver{server: srv, client: s.Path.Client(), target: target.Addr().String(), port: strconv.Itoa(int(target.Port())), version: version, test: test}, nil
}

// netperfArgs are the netperf test and test-specific flags for a case.
func netperfArgs(c model.Case) ([]string, error) {
	p := c.Params
	test, ok := netperfTests[c.Workload]
	if !ok {
		return nil, fmt.Errorf("%w: netperf does not run %s", ErrCannotRun, c.Workload)
	}
	if p.Flows > 1 {
		return nil, fmt.Errorf("%w: netperf runs one flow per process; this case asks for %d", ErrCannotRun, p.Flows)
	}
	for _, knob := range []struct {
		set  bool
		name string
	}{{p.MSS > 0, "mss"}, {p.SendBuffer > 0 || p.ReceiveBuffer > 0, "socket buffers"}, {p.CC != "", "congestion control"}} {
		if knob.set {
			return nil, fmt.Errorf("%w: cnbench runs netperf with the kernel's defaults; this case sets %s", ErrCannotRun, knob.name)
		}
	}
	if c.Workload == "udp_stream" {
		if bps, pps, err := units.ParseOfferedRate(p.Rate); err != nil || bps > 0 || pps > 0 {
			return nil, fmt.Errorf("%w: netperf's UDP_STREAM sends as fast as it can; this case offers %s", ErrCannotRun, p.Rate)
		}
	}
	args := []string{"-t", test}
	test2 := []string{"--", "-P", "," + strconv.Itoa(netperfDataPort), "-k", strings.Join(tools.NetperfKeys, ",")}
	if c.Workload == "tcp_stream" || c.Workload == "udp_stream" {
		test2 = append(test2, "-m", strconv.Itoa(p.MsgSize))
	} else {
		test2 = append(test2, "-r", strconv.Itoa(p.RequestSize)+","+strconv.Itoa(p.ResponseSize))
	}
	// TCP_NODELAY as the native engine has it: on for request/response
	// unless turned off, off for streams unless turned on.
	rr := c.Workload == "tcp_rr" || c.Workload == "tcp_crr"
	if p.NoDelay == "on" || (rr && p.NoDelay != "off") {
		test2 = append(test2, "-D")
	}
	return append(args, test2...), nil
}

func (d *netperfDriver) Stop() error {
	d.server.StopWithin(0)
	return nil
}

func (d *netperfDriver) Exchange(ctx context.Context, c model.Case, dur time.Duration) (measure.Exchange, error) {
	secs := wholeSeconds(dur)
	// -P 0: no banner. -a and -A: page-aligned buffers on both sides,
	// as iperf3's and cnbench's own are; netperf aligns to 8 bytes by
	// default, and copies from a misaligned buffer cost its streams up
	// to a third of their throughput on some CPUs.
	args := []string{"netperf", "-H", d.target, "-p", d.port, d.version, "-l", strconv.Itoa(secs), "-P", "0",
		"-a", "4096,4096", "-A", "4096,4096"}
	if c.Workload != "tcp_stream" {
		// The latency statistics; they time every transaction, which a
		// stream does not need (they cost it 8% on loopback).
		args = append(args, "-j")
	}
	args = append(args, d.test...)
	if c.Workload == "udp_stream" {
		// netperf keeps a UDP_STREAM's datagrams off routes unless told
		// (SO_DONTROUTE, against flooding a network by mistake): those
		// of a pod to another node, or to a NAT's or Service's address,
		// are routed.
		args = append(args, "-R", "1")
	}
	p, err := d.client.Start(args, nil)
	if err != nil {
		return measure.Exchange{}, err
	}
	waitErr := p.Wait(time.Duration(secs)*time.Second + 15*time.Second)
	r, err := tools.ParseNetperf([]byte(p.Stdout() + p.Stderr()))
	if waitErr != nil {
		return measure.Exchange{}, fmt.Errorf("%w: %s", waitErr, strings.TrimSpace(p.Stderr()))
	}
	if err != nil {
		return measure.Exchange{}, err
	}
	if c.Workload == "udp_stream" {
		// What arrived is what netserver received, over the test's time:
		// the datagrams the sender got out minus those lost on the way.
		size := int64(c.Params.MsgSize)
		x := measure.Exchange{SentBytes: r.SentBytes, ReceivedBytes: r.ReceivedBytes, ReceiveTime: r.Elapsed, NoJitter: true}
		x.SentPackets, x.ReceivedPackets = r.SendCalls, r.ReceiveCalls
		if x.ReceivedPackets == 0 && size > 0 {
			x.ReceivedPackets = r.ReceivedBytes / size
		}
		x.Lost = max(0, x.SentPackets-x.ReceivedPackets)
		x.ThroughputBPS = float64(r.ReceivedBytes) * 8 / r.Elapsed.Seconds()
		return x, nil
	}
	if c.Workload == "tcp_stream" {
		// The time from the precise throughput, not the elapsed time
		// netperf rounds to 10 ms (1% of a 1 s sample).
		took := r.Elapsed
		if r.ThroughputBPS > 0 && r.ReceivedBytes > 0 {
			took = time.Duration(float64(r.ReceivedBytes) * 8 / r.ThroughputBPS * float64(time.Second))
		}
		x := measure.Exchange{SentBytes: r.SentBytes, ReceivedBytes: r.ReceivedBytes, ReceiveTime: took}
		x.CountRetransmits(r.Retransmits, r.HasRetransmits, r.MSS)
		return x, nil
	}
	// netperf's TCP_CRR waits about 4 s after its test for netserver's
	// results (a 2 s test takes 6 s); the CPU the processes spent is
	// spread over the test's own time, or its percentages would read a
	// third of an engine's that is busy throughout.
	x := measure.Exchange{Transactions: r.Transactions(), TxTime: r.Elapsed, ActiveTime: r.Elapsed,
		LatencyUS: reportedLatency(r.MeanUS, r.PercentilesUS)}
	if c.Workload != "tcp_rr" {
		x.TxPerS = r.TransactionRate
	}
	return x, nil
}
