package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/engine"
	"cnbench/internal/model"
	"cnbench/internal/scenario"
	"cnbench/internal/workload"
)

// moreExchange is what the workloads beyond tcp_stream and tcp_rr, and
// the traffic patterns, observe in one exchange.
type moreExchange struct {
	// throughputBPS and txPerS are the sums over client endpoints of each
	// one's received bit/s or completed transactions per second; those
	// run side by side, so the sum is the aggregate rate.
	throughputBPS, txPerS float64
	// perEndpoint is each client endpoint's throughput (streams) or
	// transactions per second (the others); nil for ping.
	perEndpoint []float64
	// UDP: datagrams (udp_stream) or requests (udp_rr) sent, received,
	// lost and reordered, and the mean RFC 3550 jitter over flows.
	udp                                            bool
	sentPackets, receivedPackets, lost, outOfOrder int64
	jitterNS                                       float64
	// noJitter says the engine measured neither jitter nor order, as a
	// sender-only tool does not.
	noJitter bool
	// udp_rr and ping: tries that got no answer.
	tried, unanswered int64
	// ping round trips, ns.
	rtt *engine.RTTStats
	// udp_max_rate: the highest aggregate offered rate that passed, and
	// every trial of the search.
	maxRateBPS float64
	trials     int
}

// groupDriver runs cnbench's own engine in every endpoint of a case's
// group: a listener in each server, and each client's flows against its
// server, all clients at once.
type groupDriver struct {
	g                *group
	servers, clients []*nativeEngine
	// targets are what each client dials: ip:port of its server's
	// listener, or the address to ping.
	targets, pingTargets []string
}

// maxRateTrials bounds udp_max_rate's search, as the issue asks: the
// unlimited probe and up to seven bisection steps.
const maxRateTrials = 8

func newGroupDriver(ctx context.Context, s driverSetup, c model.Case) (d driver, err error) {
	g := s.server.group
	gd := &groupDriver{g: g, servers: make([]*nativeEngine, len(g.servers)), clients: make([]*nativeEngine, len(g.clients))}
	defer func() {
		if err != nil {
			err = errors.Join(err, gd.stop())
		}
	}()
	// Placement pins the first server and client; the pattern's other
	// endpoints take the same CPUs as their role.
	for _, sl := range g.servers {
		sl.cpus = s.server.cpus
	}
	for _, sl := range g.clients {
		sl.cpus = s.client.cpus
	}
	var wg sync.WaitGroup
	errs := make([]error, len(g.servers)+len(g.clients))
	for i, sl := range g.servers {
		wg.Go(func() { gd.servers[i], errs[i] = startNativeEngine(sl, s.engineCommand) })
	}
	for i, sl := range g.clients {
		wg.Go(func() { gd.clients[i], errs[len(g.servers)+i] = startNativeEngine(sl, s.engineCommand) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	opts := socketOptions(c.Params)
	serverTargets := make([]string, len(g.servers))
	pingTargets := make([]string, len(g.servers))
	for i, sl := range g.servers {
		port, err := gd.servers[i].client.ListenWith(ctx, sl.ep.Addr.String(), s.listenPort, opts)
		if err != nil {
			return nil, gd.servers[i].proc.describe(fmt.Errorf("listen on %s: %w", sl.ep.Addr, err))
		}
		target, err := g.expose(sl, port)
		if err != nil {
			return nil, err
		}
		// An echo goes where clients connect: behind nat that is the
		// server's host, which answers it, as a published container's
		// address does.
		serverTargets[i], pingTargets[i] = target.String(), target.Addr().String()
	}
	for i := range g.clients {
		gd.targets = append(gd.targets, serverTargets[g.serverOf[i]])
		gd.pingTargets = append(gd.pingTargets, pingTargets[g.serverOf[i]])
	}
	return gd, nil
}

func (d *groupDriver) stop() error {
	var wg sync.WaitGroup
	for _, e := range append(append([]*nativeEngine{}, d.clients...), d.servers...) {
		wg.Go(e.stop)
	}
	wg.Wait()
	return nil
}

// socketOptions are a case's knobs as the engine takes them.
func socketOptions(p model.Params) engine.SocketOptions {
	return engine.SocketOptions{MSS: p.MSS, SendBuffer: p.SendBuffer, ReceiveBuffer: p.ReceiveBuffer, CC: p.CC, Nagle: p.NoDelay == "off"}
}

// parseOfferedRate reads a udp_stream rate: a tc rate in bits per second,
// or a number of packets per second ("100000pps"); empty is unlimited.
func parseOfferedRate(rate string) (bps, pps int64, err error) {
	switch {
	case rate == "":
		return 0, 0, nil
	case strings.HasSuffix(strings.ToLower(rate), "pps"):
		pps, err = strconv.ParseInt(strings.TrimSpace(rate[:len(rate)-3]), 10, 64)
		if err != nil || pps < 1 {
			return 0, 0, fmt.Errorf("rate %q: expected a whole number of packets per second", rate)
		}
		return 0, pps, nil
	}
	bps, err = scenario.ParseRate(rate)
	if err != nil {
		return 0, 0, fmt.Errorf("rate %q: %w", rate, err)
	}
	return bps, 0, nil
}

// runSpec is the engine's request for a case's workload.
func runSpec(c model.Case, dur time.Duration) (engine.RunSpec, error) {
	p := c.Params
	spec := engine.RunSpec{
		Workload: c.Workload, Flows: max(1, p.Flows), MsgSize: p.MsgSize,
		RequestSize: p.RequestSize, ResponseSize: p.ResponseSize, DurationMS: max(1, dur.Milliseconds()),
		SocketOptions: socketOptions(p),
	}
	switch c.Workload {
	case "tcp_stream":
		spec.NoDelay = p.NoDelay == "on"
	case "tcp_rr", "tcp_crr":
		spec.NoDelay = p.NoDelay != "off"
	case "udp_stream", "udp_max_rate":
		spec.Workload = engine.WorkloadUDPStream
		var err error
		if spec.RateBPS, spec.RatePPS, err = parseOfferedRate(p.Rate); err != nil {
			return spec, err
		}
	case "ping":
		spec.Flows, spec.SocketOptions = 1, engine.SocketOptions{}
		spec.Count, spec.IntervalUS = p.Count, p.IntervalUS
		if spec.IntervalUS == 0 {
			spec.IntervalUS = workload.Get(c.Workload).Defaults.Interval.Microseconds()
		}
	}
	return spec, nil
}

func (d *groupDriver) exchange(ctx context.Context, c model.Case, dur time.Duration) (exchange, error) {
	spec, err := runSpec(c, dur)
	if err != nil {
		return exchange{}, err
	}
	if c.Workload == "udp_max_rate" {
		return d.maxRate(ctx, c, spec)
	}
	return d.round(ctx, c, spec)
}

// clientResult is one client endpoint's part of an exchange.
type clientResult struct {
	run  *engine.RunResult
	sess *engine.SessionResult
	err  error
}

// round runs spec from every client endpoint at once, each against its
// server, and adds up what they saw.
func (d *groupDriver) round(ctx context.Context, c model.Case, spec engine.RunSpec) (exchange, error) {
	results := make([]clientResult, len(d.clients))
	collect := spec.Workload != engine.WorkloadTCPCRR && spec.Workload != engine.WorkloadPing
	var wg sync.WaitGroup
	for i, cl := range d.clients {
		wg.Go(func() {
			s := spec
			s.Session = sessionCounter.Add(1)
			s.Target = d.targets[i]
			if s.Workload == engine.WorkloadPing {
				s.Target = d.pingTargets[i]
			}
			r := &results[i]
			if r.run, r.err = cl.client.Run(ctx, s); r.err != nil {
				r.err = cl.proc.describe(fmt.Errorf("run %s from %s against %s: %w", c.Workload, d.g.clients[i].ep.Name, s.Target, r.err))
				return
			}
			if !collect {
				return
			}
			srv := d.servers[d.g.serverOf[i]]
			if r.sess, r.err = srv.client.Collect(ctx, s.Session, 10*time.Second); r.err != nil {
				r.err = srv.proc.describe(fmt.Errorf("collect session %d: %w", s.Session, r.err))
			}
		})
	}
	wg.Wait()
	var errs []error
	for _, r := range results {
		errs = append(errs, r.err)
	}
	if err := errors.Join(errs...); err != nil {
		return exchange{}, err
	}
	return d.combine(c, spec, results)
}

// combine adds up the client endpoints' results.
func (d *groupDriver) combine(c model.Case, spec engine.RunSpec, results []clientResult) (exchange, error) {
	var x exchange
	var hists []*hdrhistogram.Histogram
	more := &moreExchange{udp: spec.Workload == engine.WorkloadUDPStream || spec.Workload == engine.WorkloadUDPRR}
	var rtt rttSum
	for _, r := range results {
		run := r.run
		x.sentBytes += run.SentBytes
		x.transactions += run.Transactions
		x.txTime = max(x.txTime, run.Elapsed)
		if run.RetransmitsKnown {
			x.retransmits += run.Retransmits
			x.retransmitsKnown = true
		}
		if len(run.LatencyHDR) > 0 {
			h, err := hdrhistogram.Decode(run.LatencyHDR)
			if err != nil {
				return x, fmt.Errorf("decode latency histogram: %w", err)
			}
			hists = append(hists, h)
		}
		var rate float64
		switch spec.Workload {
		case engine.WorkloadTCPStream, engine.WorkloadUDPStream:
			if r.sess.Elapsed > 0 {
				rate = float64(r.sess.ReceivedBytes) * 8 / r.sess.Elapsed.Seconds()
			}
			more.throughputBPS += rate
		default:
			if run.Elapsed > 0 {
				rate = float64(run.Transactions) / run.Elapsed.Seconds()
			}
			more.txPerS += rate
		}
		if spec.Workload != engine.WorkloadPing {
			more.perEndpoint = append(more.perEndpoint, rate)
		}
		if s := r.sess; s != nil {
			x.receivedBytes += s.ReceivedBytes
			x.receiveTime = max(x.receiveTime, s.Elapsed)
			x.intervals = addIntervals(x.intervals, s.Intervals)
		}
		switch spec.Workload {
		case engine.WorkloadUDPStream:
			s := r.sess
			if s.PeerSent != run.SentPackets {
				return x, fmt.Errorf("the listener heard of %d datagrams sent, the client sent %d", s.PeerSent, run.SentPackets)
			}
			more.sentPackets += run.SentPackets
			more.receivedPackets += s.Packets
			more.lost += s.PeerLost
			more.outOfOrder += s.OutOfOrder
			more.jitterNS += s.JitterNS / float64(len(results))
		case engine.WorkloadUDPRR:
			more.sentPackets += run.SentPackets
			more.receivedPackets += r.sess.Packets
			more.tried += run.SentPackets
			more.unanswered += run.Lost
		case engine.WorkloadPing:
			more.tried += run.SentPackets
			more.unanswered += run.Lost
			rtt.add(run.Transactions, run.RTT)
		}
	}
	if len(hists) > 0 {
		merged := hists[0]
		for _, h := range hists[1:] {
			merged.Merge(h)
		}
		if len(hists) == 1 {
			x.latencyHDR = results[0].run.LatencyHDR
		} else {
			enc, err := merged.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
			if err != nil {
				return x, fmt.Errorf("encode latency histogram: %w", err)
			}
			x.latencyHDR = enc
		}
	}
	more.rtt = rtt.stats()
	if d.g.multi() || c.Params.Pattern != "" || (c.Workload != "tcp_stream" && c.Workload != "tcp_rr") {
		x.more = more
	}
	return x, nil
}

// addIntervals adds b to a interval by interval.
func addIntervals(a, b []model.Interval) []model.Interval {
	for i, iv := range b {
		if i >= len(a) {
			a = append(a, iv)
			continue
		}
		a[i].Bytes += iv.Bytes
		a[i].Packets += iv.Packets
		a[i].Lost += iv.Lost
		a[i].EndMS = max(a[i].EndMS, iv.EndMS)
	}
	return a
}

// rttSum pools the round trips of several ping runs.
type rttSum struct {
	n                    int64
	min, max, sum, sumSq float64
}

func (r *rttSum) add(n int64, s *engine.RTTStats) {
	if s == nil || n == 0 {
		return
	}
	if r.n == 0 || s.Min < r.min {
		r.min = s.Min
	}
	r.max = math.Max(r.max, s.Max)
	r.sum += s.Avg * float64(n)
	r.sumSq += (s.Mdev*s.Mdev + s.Avg*s.Avg) * float64(n)
	r.n += n
}

func (r *rttSum) stats() *engine.RTTStats {
	if r.n == 0 {
		return nil
	}
	avg := r.sum / float64(r.n)
	return &engine.RTTStats{Min: r.min, Avg: avg, Max: r.max, Mdev: math.Sqrt(math.Max(0, r.sumSq/float64(r.n)-avg*avg))}
}

// maxRate searches the highest offered rate whose loss stays below the
// case's threshold: a first, unpaced trial shows what the sender can
// offer and the path delivers; then bisection between nothing and that
// offered rate, starting at the delivered one, for at most maxRateTrials
// trials in all, each as long as a sample. While nothing above a passing
// rate has failed yet, the next step goes at most a quarter higher: the
// answer is rarely far above what the path delivered, and halving from
// an unpaced sender's rate would spend the trials far above it. The
// sample holds the passing trial with the highest rate, and every trial
// as an interval.
func (d *groupDriver) maxRate(ctx context.Context, c model.Case, spec engine.RunSpec) (exchange, error) {
	threshold := c.Params.LossThresholdPct
	if threshold <= 0 {
		threshold = workload.Get(c.Workload).Defaults.LossThresholdPct
	}
	flows := float64(spec.Flows * len(d.clients))
	began := time.Now()
	var trials []model.Interval
	trial := func(ratePerFlow int64) (exchange, float64, float64, error) {
		s := spec
		s.RateBPS, s.RatePPS = ratePerFlow, 0
		start := time.Since(began)
		x, err := d.round(ctx, c, s)
		if err != nil {
			return x, 0, 0, fmt.Errorf("trial %d at %d bit/s per flow: %w", len(trials)+1, ratePerFlow, err)
		}
		m := x.more
		offered := float64(ratePerFlow) * flows
		if ratePerFlow == 0 && x.txTime > 0 {
			offered = float64(x.sentBytes) * 8 / x.txTime.Seconds()
		}
		loss := 0.0
		if m.sentPackets > 0 {
			loss = 100 * float64(m.lost) / float64(m.sentPackets)
		}
		trials = append(trials, model.Interval{
			StartMS: start.Milliseconds(), EndMS: time.Since(began).Milliseconds(),
			Bytes: x.receivedBytes, BPS: m.throughputBPS, Packets: m.receivedPackets, Lost: m.lost,
			OfferedBPS: offered, LossPct: loss,
		})
		return x, offered, loss, nil
	}
	first, offered, loss, err := trial(0)
	if err != nil {
		return exchange{}, err
	}
	best, bestRate := first, -1.0
	if loss < threshold {
		bestRate = offered
	} else {
		ceiling := offered / flows
		lo, hi := 0.0, ceiling
		rate := first.more.throughputBPS / flows
		for len(trials) < maxRateTrials && rate >= 1 {
			x, offered, loss, err := trial(int64(rate))
			if err != nil {
				return exchange{}, err
			}
			if loss < threshold {
				lo, best, bestRate = rate, x, offered
			} else {
				hi = rate
			}
			// Two percent is finer than run-to-run spread of a loss rate.
			if hi-lo <= 0.02*hi {
				break
			}
			rate = (lo + hi) / 2
			if lo > 0 && hi == ceiling {
				rate = min(rate, lo*1.25)
			}
		}
	}
	best.more.maxRateBPS = max(0, bestRate)
	best.more.trials = len(trials)
	best.intervals = trials
	return best, nil
}
