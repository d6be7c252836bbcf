package runner

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/engine"
	"cnbench/internal/model"
	"cnbench/internal/tools"
)

// onePair limits an external tool's driver to one server and one client
// endpoint: the tools measure one path, and only cnbench's own engine
// adds up patterns of many.
func onePair(newDriver func(context.Context, driverSetup, model.Case) (driver, error)) func(context.Context, driverSetup, model.Case) (driver, error) {
	return func(ctx context.Context, s driverSetup, c model.Case) (driver, error) {
		if g := s.server.group; g != nil && g.multi() {
			return nil, fmt.Errorf("%w: %s runs one pair of endpoints; pattern %s places %d servers and %d clients",
				errEngineCannot, c.Engine, c.Params.Pattern, len(g.servers), len(g.clients))
		}
		return newDriver(ctx, s, c)
	}
}

// iperf3Args are the iperf3 client flags for a case's workload and knobs.
func iperf3Args(c model.Case) ([]string, error) {
	p := c.Params
	var args []string
	if c.Workload == "udp_stream" {
		bps, pps, err := parseOfferedRate(p.Rate)
		if err != nil {
			return nil, err
		}
		if pps > 0 {
			return nil, fmt.Errorf("%w: iperf3 takes a rate in bits per second, not %s", errEngineCannot, p.Rate)
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
				errEngineCannot, p.SendBuffer, p.ReceiveBuffer)
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

// iperf3UDP is what an iperf3 UDP report adds to an exchange.
func iperf3UDP(r tools.Iperf3Result) *moreExchange {
	m := &moreExchange{
		udp: true, sentPackets: r.Packets, receivedPackets: r.Packets - r.LostPackets, lost: r.LostPackets,
		jitterNS: r.JitterMS * 1e6,
	}
	if r.ReceiveTime > 0 {
		m.throughputBPS = float64(r.ReceivedBytes) * 8 / r.ReceiveTime.Seconds()
	}
	return m
}

// pingDriver runs iputils ping from the client endpoint to the server's
// address, once per sample.
type pingDriver struct {
	client *slot
	target string
}

// pingExposedPort is only asked of the mode to learn where clients reach
// the server; ICMP has no ports.
const pingExposedPort = 7

func newPingDriver(_ context.Context, s driverSetup, _ model.Case) (driver, error) {
	target, err := s.expose(pingExposedPort)
	if err != nil {
		return nil, err
	}
	return &pingDriver{client: s.client, target: target.Addr().String()}, nil
}

func (d *pingDriver) stop() error { return nil }

func (d *pingDriver) exchange(_ context.Context, c model.Case, dur time.Duration) (exchange, error) {
	spec, err := runSpec(c, dur)
	if err != nil {
		return exchange{}, err
	}
	gap := time.Duration(spec.IntervalUS) * time.Microsecond
	count := spec.Count
	if count == 0 {
		count = int(dur/gap) + 1
	}
	args := []string{"ping", "-n", "-c", strconv.Itoa(count), "-i", strconv.FormatFloat(gap.Seconds(), 'f', -1, 64),
		"-s", strconv.Itoa(max(spec.MsgSize, engine.MinPingPayload)), "-W", "1", d.target}
	p, err := d.client.start(args, nil)
	if err != nil {
		return exchange{}, err
	}
	// ping exits 1 when replies are missing, which is a result, not a
	// failure: its statistics say how many.
	waitErr := p.wait(time.Duration(count)*gap + 15*time.Second)
	r, err := tools.ParsePing([]byte(p.stdout.String()))
	if err != nil {
		if waitErr != nil {
			return exchange{}, fmt.Errorf("%w: %v", waitErr, err)
		}
		return exchange{}, err
	}
	h := hdrhistogram.New(1, 60_000_000_000, 3)
	for _, us := range r.RTTsUS {
		_ = h.RecordValue(int64(us * 1e3))
	}
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return exchange{}, fmt.Errorf("encode latency histogram: %w", err)
	}
	x := exchange{transactions: r.Received, txTime: time.Duration(count) * gap, latencyHDR: enc}
	x.more = &moreExchange{tried: r.Transmitted, unanswered: r.Transmitted - r.Received}
	if r.Received > 0 {
		x.more.rtt = &engine.RTTStats{Min: r.MinUS * 1e3, Avg: r.AvgUS * 1e3, Max: r.MaxUS * 1e3, Mdev: r.MdevUS * 1e3}
	}
	return x, nil
}
