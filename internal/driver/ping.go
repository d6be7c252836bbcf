package driver

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/engine"
	"cnbench/internal/measure"
	"cnbench/internal/model"
	"cnbench/internal/site"
	"cnbench/internal/tools"
)

// pingDriver runs iputils ping from the client endpoint to the server's
// address, once per sample.
type pingDriver struct {
	client site.Site
	target string
}

// pingExposedPort is only asked of the mode to learn where clients reach
// the server; ICMP has no ports.
const pingExposedPort = 7

func newPingDriver(_ context.Context, s Setup, _ model.Case) (Driver, error) {
	target, err := s.Path.Expose(s.Path.Server(), pingExposedPort)
	if err != nil {
		return nil, err
	}
	return &pingDriver{client: s.Path.Client(), target: target.Addr().String()}, nil
}

func (d *pingDriver) Stop() error { return nil }

func (d *pingDriver) Exchange(_ context.Context, c model.Case, dur time.Duration) (measure.Exchange, error) {
	spec, err := runSpec(c, dur)
	if err != nil {
		return measure.Exchange{}, err
	}
	gap := time.Duration(spec.IntervalUS) * time.Microsecond
	count := spec.Count
	if count == 0 {
		count = int(dur/gap) + 1
	}
	args := []string{"ping", "-n", "-c", strconv.Itoa(count), "-i", strconv.FormatFloat(gap.Seconds(), 'f', -1, 64),
		"-s", strconv.Itoa(max(spec.MsgSize, engine.MinPingPayload)), "-W", "1", d.target}
	p, err := d.client.Start(args, nil)
	if err != nil {
		return measure.Exchange{}, err
	}
	// ping exits 1 when replies are missing, which is a result, not a
	// failure: its statistics say how many.
	waitErr := p.Wait(time.Duration(count)*gap + 15*time.Second)
	r, err := tools.ParsePing([]byte(p.Stdout()))
	if err != nil {
		if waitErr != nil {
			return measure.Exchange{}, fmt.Errorf("%w: %v", waitErr, err)
		}
		return measure.Exchange{}, err
	}
	h := hdrhistogram.New(1, 60_000_000_000, 3)
	for _, us := range r.RTTsUS {
		_ = h.RecordValue(int64(us * 1e3))
	}
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return measure.Exchange{}, fmt.Errorf("encode latency histogram: %w", err)
	}
	x := measure.Exchange{Transactions: r.Received, TxTime: time.Duration(count) * gap, LatencyHDR: enc}
	x.Tried, x.Unanswered = r.Transmitted, r.Transmitted-r.Received
	if r.Received > 0 {
		x.RTT = &engine.RTTStats{Min: r.MinUS * 1e3, Avg: r.AvgUS * 1e3, Max: r.MaxUS * 1e3, Mdev: r.MdevUS * 1e3}
	}
	return x, nil
}
