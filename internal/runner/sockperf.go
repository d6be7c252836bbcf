package runner

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"cnbench/internal/model"
	"cnbench/internal/tools"
)

// sockperfPort is where the sockperf server listens inside its endpoint.
const sockperfPort = 11111

// sockperfDriver runs sockperf ping-pong for request/response, over TCP
// for tcp_rr and over UDP (sockperf's own default) for udp_rr: a server
// that echoes every message, and one client run per sample that reports
// full round-trip times.
type sockperfDriver struct {
	server *proc
	client *slot
	target string
	port   string
	// proto is "--tcp", or empty for UDP.
	proto []string
}

func newSockperfDriver(ctx context.Context, s driverSetup, c model.Case) (driver, error) {
	if c.Params.RequestSize != c.Params.ResponseSize {
		return nil, fmt.Errorf("%w: sockperf echoes each request, so request_size (%d) and response_size (%d) must match",
			errEngineCannot, c.Params.RequestSize, c.Params.ResponseSize)
	}
	var proto []string
	listen := "udp"
	if c.Workload == "tcp_rr" {
		proto, listen = []string{"--tcp"}, "tcp"
	}
	args := append([]string{"sockperf", "server", "-i", s.server.ep.Addr.String(), "-p", strconv.Itoa(sockperfPort)}, proto...)
	srv, target, err := startToolServer(ctx, s, args, listen, sockperfPort)
	if err != nil {
		return nil, err
	}
	return &sockperfDriver{server: srv, client: s.client, target: target.Addr().String(), port: strconv.Itoa(int(target.Port())), proto: proto}, nil
}

func (d *sockperfDriver) stop() error {
	d.server.stopWithin(0)
	return nil
}

func (d *sockperfDriver) exchange(ctx context.Context, c model.Case, dur time.Duration) (exchange, error) {
	secs := wholeSeconds(dur)
	args := append([]string{"sockperf", "ping-pong", "-i", d.target, "-p", d.port,
		"-t", strconv.Itoa(secs), "-m", strconv.Itoa(c.Params.RequestSize), "--full-rtt"}, d.proto...)
	p, err := d.client.start(args, nil)
	if err != nil {
		return exchange{}, err
	}
	if err := p.wait(time.Duration(secs)*time.Second + 15*time.Second); err != nil {
		return exchange{}, err
	}
	r, err := tools.ParseSockperfPingPong([]byte(p.stdout.String() + p.stderr.String()))
	if err != nil {
		return exchange{}, err
	}
	lat := map[string]float64{model.LatencyMeanUS: r.AvgRTTUS}
	for _, q := range model.LatencyPercentiles {
		if v, ok := r.PercentilesUS[q.Quantile]; ok {
			lat[q.Name] = v
		}
	}
	x := exchange{transactions: r.Transactions, txTime: r.ValidTime, latencyUS: lat, cpuTransactions: r.AllTransactions, activeTime: r.RunTime}
	if c.Workload == "udp_rr" {
		x.more = &moreExchange{txPerS: float64(r.Transactions) / r.ValidTime.Seconds(), udp: true}
	}
	return x, nil
}
