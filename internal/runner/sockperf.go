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

// sockperfDriver runs sockperf ping-pong for request/response: a server
// that echoes every message, and one client run per sample that reports
// full round-trip times.
type sockperfDriver struct {
	server *proc
	client *slot
	target string
	port   string
}

func newSockperfDriver(ctx context.Context, s driverSetup, c model.Case) (driver, error) {
	if c.Params.RequestSize != c.Params.ResponseSize {
		return nil, fmt.Errorf("%w: sockperf echoes each request, so request_size (%d) and response_size (%d) must match",
			errEngineCannot, c.Params.RequestSize, c.Params.ResponseSize)
	}
	args := []string{"sockperf", "server", "--tcp", "-i", s.server.ep.Addr.String(), "-p", strconv.Itoa(sockperfPort)}
	srv, target, err := startToolServer(ctx, s, args, sockperfPort)
	if err != nil {
		return nil, err
	}
	return &sockperfDriver{server: srv, client: s.client, target: target.Addr().String(), port: strconv.Itoa(int(target.Port()))}, nil
}

func (d *sockperfDriver) stop() error {
	d.server.stopWithin(0)
	return nil
}

func (d *sockperfDriver) exchange(ctx context.Context, c model.Case, dur time.Duration) (exchange, error) {
	secs := wholeSeconds(dur)
	args := []string{"sockperf", "ping-pong", "--tcp", "-i", d.target, "-p", d.port,
		"-t", strconv.Itoa(secs), "-m", strconv.Itoa(c.Params.RequestSize), "--full-rtt"}
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
	return exchange{transactions: r.Transactions, txTime: r.ValidTime, latencyUS: lat}, nil
}
