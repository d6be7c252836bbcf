package driver

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"cnbench/internal/measure"
	"cnbench/internal/model"
	"cnbench/internal/site"
	"cnbench/internal/tools"
	"cnbench/internal/units"
)

// sockperfPort is where the sockperf server listens inside its endpoint.
const sockperfPort = 11111

// sockperfDriver runs sockperf ping-pong for request/response, over TCP
// for tcp_rr and over UDP (sockperf's own default) for udp_rr: a server
// that echoes every message, and one client run per sample that reports
// full round-trip times. For udp_stream it runs sockperf throughput
// against the same server.
type sockperfDriver struct {
	server *site.Proc
	// serverSite is where the server runs, whose namespace's UDP
	// counters say what arrived of a throughput run.
	serverSite site.Site
	client     site.Site
	target     string
	port       string
	// proto is "--tcp", or empty for UDP.
	proto []string
	// throughputArgs are a udp_stream case's sockperf throughput flags.
	throughputArgs []string
}

func newSockperfDriver(ctx context.Context, s Setup, c model.Case) (Driver, error) {
	var throughputArgs []string
	if c.Workload == "udp_stream" {
		var err error
		if throughputArgs, err = sockperfThroughputArgs(c); err != nil {
			return nil, err
		}
	} else if c.Params.RequestSize != c.Params.ResponseSize {
		return nil, fmt.Errorf("%w: sockperf echoes each request, so request_size (%d) and response_size (%d) must match",
			ErrCannotRun, c.Params.RequestSize, c.Params.ResponseSize)
	}
	if addr := s.Path.Server().Endpoint().Addr; addr.Is6() {
		if v, ok := sockperfVersion(); ok && !takesIPv6(v) {
			return nil, fmt.Errorf("%w: sockperf %s takes IPv4 addresses only (it answers \"'-i' Invalid address\" to %s)", ErrCannotRun, v, addr)
		}
	}
	var proto []string
	listen := "udp"
	if c.Workload == "tcp_rr" {
		proto, listen = []string{"--tcp"}, "tcp"
	}
	args := append([]string{"sockperf", "server", "-i", s.Path.Server().Endpoint().Addr.String(), "-p", strconv.Itoa(sockperfPort)}, proto...)
	srv, target, err := startToolServer(ctx, s, args, listen, sockperfPort)
	if err != nil {
		return nil, err
	}
	return &sockperfDriver{server: srv, serverSite: s.Path.Server(), client: s.Path.Client(), target: target.Addr().String(), port: strconv.Itoa(int(target.Port())), proto: proto, throughputArgs: throughputArgs}, nil
}

func (d *sockperfDriver) Stop() error {
	d.server.StopWithin(0)
	return nil
}

func (d *sockperfDriver) Exchange(ctx context.Context, c model.Case, dur time.Duration) (measure.Exchange, error) {
	if c.Workload == "udp_stream" {
		return d.throughput(c, dur)
	}
	secs := wholeSeconds(dur)
	args := append([]string{"sockperf", "ping-pong", "-i", d.target, "-p", d.port,
		"-t", strconv.Itoa(secs), "-m", strconv.Itoa(c.Params.RequestSize), "--full-rtt"}, d.proto...)
	p, err := d.client.Start(args, nil)
	if err != nil {
		return measure.Exchange{}, err
	}
	if err := p.Wait(time.Duration(secs)*time.Second + 15*time.Second); err != nil {
		return measure.Exchange{}, err
	}
	r, err := tools.ParseSockperfPingPong([]byte(p.Stdout() + p.Stderr()))
	if err != nil {
		return measure.Exchange{}, err
	}
	x := measure.Exchange{Transactions: r.Transactions, TxTime: r.ValidTime, LatencyUS: reportedLatency(r.AvgRTTUS, r.PercentilesUS), CPUTransactions: r.AllTransactions, ActiveTime: r.RunTime}
	if c.Workload == "udp_rr" {
		x.TxPerS = float64(r.Transactions) / r.ValidTime.Seconds()
	}
	return x, nil
}

// sockperfThroughputArgs are the sockperf throughput flags for a
// udp_stream case: its message size, and its rate in messages per second
// (--mps), from packets per second or from payload bits per second.
func sockperfThroughputArgs(c model.Case) ([]string, error) {
	p := c.Params
	if p.Flows > 1 {
		return nil, fmt.Errorf("%w: sockperf throughput sends on one socket; this case asks for %d flows", ErrCannotRun, p.Flows)
	}
	if p.SendBuffer > 0 || p.ReceiveBuffer > 0 {
		return nil, fmt.Errorf("%w: cnbench runs sockperf with the kernel's socket buffers; this case sets them", ErrCannotRun)
	}
	bps, pps, err := units.ParseOfferedRate(p.Rate)
	if err != nil {
		return nil, err
	}
	mps := "max"
	switch {
	case pps > 0:
		mps = strconv.FormatInt(pps, 10)
	case bps > 0:
		mps = strconv.FormatInt(max(1, bps/int64(8*p.MsgSize)), 10)
	}
	return []string{"-m", strconv.Itoa(p.MsgSize), "--mps=" + mps}, nil
}

// throughput runs sockperf throughput once. sockperf counts only what it
// sent; what arrived is what the kernel delivered to sockets in the
// server's namespace over the same run, read where the server lives (by
// its agent, for a pod). That namespace is cnbench's own and holds no
// other UDP traffic, but for a hostNetwork pod's, its node's.
func (d *sockperfDriver) throughput(c model.Case, dur time.Duration) (measure.Exchange, error) {
	secs := wholeSeconds(dur)
	args := append([]string{"sockperf", "throughput", "-i", d.target, "-p", d.port, "-t", strconv.Itoa(secs)}, d.throughputArgs...)
	before, err := d.serverSite.Read(true)
	if err != nil {
		return measure.Exchange{}, err
	}
	p, err := d.client.Start(args, nil)
	if err != nil {
		return measure.Exchange{}, err
	}
	if err := p.Wait(time.Duration(secs)*time.Second + 15*time.Second); err != nil {
		return measure.Exchange{}, err
	}
	after, err := d.serverSite.Read(true)
	if err != nil {
		return measure.Exchange{}, err
	}
	r, err := tools.ParseSockperfThroughput([]byte(p.Stdout() + p.Stderr()))
	if err != nil {
		return measure.Exchange{}, err
	}
	arrived := after.UDP.Sub(before.UDP).InDatagrams
	if arrived > uint64(r.Messages) {
		return measure.Exchange{}, fmt.Errorf("sockperf sent %d messages, but %d datagrams arrived at the server's namespace", r.Messages, arrived)
	}
	received, size := int64(arrived), int64(c.Params.MsgSize)
	x := measure.Exchange{SentBytes: r.Messages * size, ReceivedBytes: received * size, ActiveTime: r.Time}
	x.SentPackets, x.ReceivedPackets, x.Lost = r.Messages, received, r.Messages-received
	x.ThroughputBPS, x.NoJitter = float64(received*size)*8/r.Time.Seconds(), true
	return x, nil
}

// sockperfVersion is the installed sockperf's version ("3.7" of
// "sockperf, version 3.7-no.git"), read once.
var sockperfVersion = sync.OnceValues(func() (string, bool) {
	out, err := exec.Command("sockperf", "--version").CombinedOutput()
	if err != nil {
		return "", false
	}
	_, rest, ok := strings.Cut(string(out), "version ")
	if !ok {
		return "", false
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", false
	}
	v, _, _ := strings.Cut(fields[0], "-")
	return v, v != ""
})

// takesIPv6 reports whether a sockperf of version v is known to take
// IPv6 addresses: 3.7 and older do not (the version Debian ships here
// refuses them); newer ones are let try.
func takesIPv6(v string) bool {
	major, minor, _ := strings.Cut(v, ".")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(strings.SplitN(minor, ".", 2)[0])
	if err1 != nil || err2 != nil {
		return true
	}
	return ma > 3 || (ma == 3 && mi > 7)
}
