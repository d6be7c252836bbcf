package runner

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"cnbench/internal/model"
	"cnbench/internal/tools"
)

// iperf3Port is where the iperf3 server listens inside its endpoint; the
// namespace is cnbench's own, so no other program can hold the port.
const iperf3Port = 5201

// iperf3Driver runs iperf3: a server that stays up for the whole case and
// one client run per sample, whose --json report is parsed.
type iperf3Driver struct {
	server *proc
	client *slot
	target string
	port   string
}

func newIperf3Driver(ctx context.Context, s driverSetup, _ model.Case) (driver, error) {
	args := []string{"iperf3", "--server", "--bind", s.server.ep.Addr.String(), "--port", strconv.Itoa(iperf3Port)}
	srv, target, err := startToolServer(ctx, s, args, "tcp", iperf3Port)
	if err != nil {
		return nil, err
	}
	return &iperf3Driver{server: srv, client: s.client, target: target.Addr().String(), port: strconv.Itoa(int(target.Port()))}, nil
}

func (d *iperf3Driver) stop() error {
	d.server.stopWithin(0)
	return nil
}

func (d *iperf3Driver) exchange(ctx context.Context, c model.Case, dur time.Duration) (exchange, error) {
	secs := wholeSeconds(dur)
	args := []string{"iperf3", "--client", d.target, "--port", d.port, "--json",
		"--time", strconv.Itoa(secs), "--parallel", strconv.Itoa(c.Params.Flows),
		"--length", strconv.Itoa(c.Params.MsgSize), "--connect-timeout", "3000"}
	extra, err := iperf3Args(c)
	if err != nil {
		return exchange{}, err
	}
	args = append(args, extra...)
	p, err := d.client.start(args, nil)
	if err != nil {
		return exchange{}, err
	}
	// iperf3 hangs rather than fails on some errors: bound its run.
	if err := p.wait(time.Duration(secs)*time.Second + 15*time.Second); err != nil {
		if r, perr := tools.ParseIperf3([]byte(p.stdout.String())); perr != nil && r.ReceivedBytes == 0 {
			return exchange{}, fmt.Errorf("%w: %v", err, perr)
		}
		return exchange{}, err
	}
	r, err := tools.ParseIperf3([]byte(p.stdout.String()))
	if err != nil {
		return exchange{}, err
	}
	x := exchange{
		sentBytes: r.SentBytes, receivedBytes: r.ReceivedBytes, receiveTime: r.ReceiveTime,
		retransmits: r.Retransmits, retransmitsKnown: r.HasRetransmits,
	}
	if c.Workload == "udp_stream" {
		x.more = iperf3UDP(r)
	}
	for _, iv := range r.Intervals {
		x.intervals = append(x.intervals, model.Interval{
			StartMS: int64(iv.Start * 1000), EndMS: int64(iv.End * 1000), Bytes: iv.Bytes,
			BPS: float64(iv.Bytes) * 8 / max(iv.End-iv.Start, 1e-9),
		})
	}
	return x, nil
}
