package driver

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"cnbench/internal/measure"
	"cnbench/internal/model"
	"cnbench/internal/site"
	"cnbench/internal/tools"
	"cnbench/internal/units"
)

// iperf3Port is where the iperf3 server listens inside its endpoint; the
// namespace is cnbench's own, so no other program can hold the port.
const iperf3Port = 5201

// iperf3Driver runs iperf3: a server that stays up for the whole case and
// one client run per sample, whose --json report is parsed.
type iperf3Driver struct {
	server *site.Proc
	client site.Site
	target string
	port   string
}

func newIperf3Driver(ctx context.Context, s Setup, _ model.Case) (Driver, error) {
	args := []string{"iperf3", "--server", "--bind", s.Path.Server().Endpoint().Addr.String(), "--port", strconv.Itoa(iperf3Port)}
	srv, target, err := startToolServer(ctx, s, args, "tcp", iperf3Port)
	if err != nil {
		return nil, err
	}
	return &iperf3Driver{server: srv, client: s.Path.Client(), target: target.Addr().String(), port: strconv.Itoa(int(target.Port()))}, nil
}

func (d *iperf3Driver) Stop() error {
	d.server.StopWithin(0)
	return nil
}

func (d *iperf3Driver) Exchange(ctx context.Context, c model.Case, dur time.Duration) (measure.Exchange, error) {
	secs := wholeSeconds(dur)
	args := []string{"iperf3", "--client", d.target, "--port", d.port, "--json",
		"--time", strconv.Itoa(secs), "--parallel", strconv.Itoa(c.Params.Flows),
		"--length", strconv.Itoa(c.Params.MsgSize), "--connect-timeout", "3000"}
	extra, err := iperf3Args(c)
	if err != nil {
		return measure.Exchange{}, err
	}
	args = append(args, extra...)
	p, err := d.client.Start(args, nil)
	if err != nil {
		return measure.Exchange{}, err
	}
	// iperf3 hangs rather than fails on some errors: bound its run.
	if err := p.Wait(time.Duration(secs)*time.Second + 15*time.Second); err != nil {
		if r, perr := tools.ParseIperf3([]byte(p.Stdout())); perr != nil && r.ReceivedBytes == 0 {
			return measure.Exchange{}, fmt.Errorf("%w: %v", err, perr)
		}
		return measure.Exchange{}, err
	}
	r, err := tools.ParseIperf3([]byte(p.Stdout()))
	if err != nil {
		return measure.Exchange{}, err
	}
	x := measure.Exchange{SentBytes: r.SentBytes, ReceivedBytes: r.ReceivedBytes, ReceiveTime: r.ReceiveTime, PerFlow: r.FlowBPS}
	x.CountRetransmits(r.Retransmits, r.HasRetransmits, r.MSS)
	if c.Workload == "udp_stream" {
		iperf3UDP(&x, r)
	}
	for _, iv := range r.Intervals {
		x.Intervals = append(x.Intervals, model.Interval{
			StartMS: int64(iv.Start * 1000), EndMS: int64(iv.End * 1000), Bytes: iv.Bytes,
			BPS: float64(iv.Bytes) * 8 / max(iv.End-iv.Start, 1e-9),
		})
	}
	return x, nil
}

// iperf3Args are the iperf3 client flags for a case's workload and knobs.
func iperf3Args(c model.Case) ([]string, error) {
	p := c.Params
	var args []string
	if c.Workload == "udp_stream" {
		bps, pps, err := units.ParseOfferedRate(p.Rate)
		if err != nil {
			return nil, err
		}
		if pps > 0 {
			return nil, fmt.Errorf("%w: iperf3 takes a rate in bits per second, not %s", ErrCannotRun, p.Rate)
		}
		// -b 0 is unlimited for UDP, which otherwise defaults to 1 Mbit/s.
		args = append(args, "--udp", "--bitrate", strconv.FormatInt(bps, 10))
	}
	if p.MSS > 0 {
		args = append(args, "--set-mss", strconv.Itoa(p.MSS))
	}
	if p.SendBuffer > 0 || p.ReceiveBuffer > 0 {
		// iperf3's window sets both buffers on both ends.
		if p.SendBuffer > 0 && p.ReceiveBuffer > 0 && p.SendBuffer != p.ReceiveBuffer {
			return nil, fmt.Errorf("%w: iperf3 sets one window for both buffers; send_buffer %d and receive_buffer %d differ",
				ErrCannotRun, p.SendBuffer, p.ReceiveBuffer)
		}
		args = append(args, "--window", strconv.Itoa(max(p.SendBuffer, p.ReceiveBuffer)))
	}
	if p.CC != "" {
		args = append(args, "--congestion", p.CC)
	}
	if p.NoDelay == "on" {
		args = append(args, "--no-delay")
	}
	return args, nil
}

// iperf3UDP adds what an iperf3 UDP report says to an exchange.
func iperf3UDP(x *measure.Exchange, r tools.Iperf3Result) {
	x.SentPackets, x.ReceivedPackets, x.Lost = r.Packets, r.Packets-r.LostPackets, r.LostPackets
	x.JitterNS = r.JitterMS * 1e6
	if r.ReceiveTime > 0 {
		x.ThroughputBPS = float64(r.ReceivedBytes) * 8 / r.ReceiveTime.Seconds()
	}
}
