package driver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/engine"
	"cnbench/internal/measure"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/site"
	"cnbench/internal/units"
	"cnbench/internal/workload"
)

// nativeDriver runs cnbench's own engine, long-lived `cnbench engine`
// processes controlled over their control lines: a listener in each
// server, and each client's flows against its server, all clients at
// once. A process serves one endpoint, or with model.EnginesPerHost the
// clients (or the servers) of one host each (see engineHomes).
type nativeDriver struct {
	path *site.Path
	// servers and clients are the engine serving each endpoint, and
	// serverNetns and clientNetns the namespace it opens that endpoint's
	// sockets in: empty where the engine is the endpoint's own.
	servers, clients         []*site.Engine
	serverNetns, clientNetns []string
	// sharedClients says whether an engine serves several clients, whose
	// runs then name their endpoint.
	sharedClients bool
	// targets are what each client dials: ip:port of its server's
	// listener, or the address to ping.
	targets, pingTargets []string
	// ready are the clients' runs Prepare connected ahead, one per
	// client, until the exchange starts them.
	ready []engine.RunSpec
}

// sessionCounter numbers the sessions of all engines, so a listener
// never mistakes one run's flows for another's.
var sessionCounter atomic.Uint64

// MaxRateTrials bounds udp_max_rate's search: the unlimited probe and up
// to seven bisection steps, eight samples' time in all.
const MaxRateTrials = 8

func newNativeDriver(ctx context.Context, s Setup, c model.Case) (d Driver, err error) {
	p := s.Path
	nd := &nativeDriver{path: p}
	defer func() {
		if err != nil {
			err = errors.Join(err, nd.Stop())
		}
	}()
	share := c.Params.Engines == model.EnginesPerHost && c.Workload != workload.TCPCRR
	perClient, perServer := workload.Get(c.Workload).SocketsPerFlow()
	flows := max(1, c.Params.Flows)
	clientsOf := make([]int, len(p.Servers))
	for _, srv := range p.ServerOf {
		clientsOf[srv]++
	}
	serverHomes := engineHomes(p.Servers, share, func(i int) int { return clientsOf[i] * flows * perServer })
	clientHomes := engineHomes(p.Clients, share, func(int) int { return flows * perClient })
	var errs [2]error
	var wg sync.WaitGroup
	wg.Go(func() { nd.servers, nd.serverNetns, errs[0] = startEngines(p.Servers, serverHomes, s.EngineCommand) })
	wg.Go(func() { nd.clients, nd.clientNetns, errs[1] = startEngines(p.Clients, clientHomes, s.EngineCommand) })
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	for i, h := range clientHomes {
		nd.sharedClients = nd.sharedClients || h != i
	}
	return nd, nd.listen(ctx, s.ListenPort, socketOptions(c.Params))
}

// engineHomes says which site's engine serves each site: its own, or
// with share the first of the sites before it in the same home
// (site.Sharer's EngineHome) whose engine holds fewer than
// workload.MaxEngineSockets sockets with this site's added.
func engineHomes(sites []site.Site, share bool, sockets func(i int) int) []int {
	homes := make([]int, len(sites))
	open := map[string]int{}
	load := make([]int, len(sites))
	for i, st := range sites {
		homes[i] = i
		sh, ok := st.(site.Sharer)
		if !share || !ok {
			continue
		}
		key := sh.EngineHome()
		if first, ok := open[key]; ok && load[first]+sockets(i) <= workload.MaxEngineSockets {
			homes[i] = first
			load[first] += sockets(i)
			continue
		}
		open[key], load[i] = i, sockets(i)
	}
	return homes
}

// startEngines starts an engine in each site that is its own home, and
// gives every site the engine of its home and the namespace that engine
// opens its sockets in. The engines that started are returned on error
// too, for Stop.
func startEngines(sites []site.Site, homes []int, command []string) ([]*site.Engine, []string, error) {
	engines := make([]*site.Engine, len(sites))
	netns := make([]string, len(sites))
	errs := make([]error, len(sites))
	var wg sync.WaitGroup
	for i, st := range sites {
		if homes[i] == i {
			wg.Go(func() { engines[i], errs[i] = st.StartEngine(command) })
		}
	}
	wg.Wait()
	for i, st := range sites {
		if h := homes[i]; h != i {
			engines[i], netns[i] = engines[h], st.(site.Sharer).NamespacePath()
		}
	}
	return engines, netns, errors.Join(errs...)
}

// listen has every server's engine listen, on port if not 0, and learns
// what each client dials.
func (d *nativeDriver) listen(ctx context.Context, port int, opts engine.SocketOptions) error {
	p := d.path
	serverTargets := make([]string, len(p.Servers))
	pingTargets := make([]string, len(p.Servers))
	for i := range p.Servers {
		target, err := d.listenOne(ctx, i, port, opts)
		if err != nil {
			return err
		}
		// An echo goes where clients connect: behind nat that is the
		// server's host, which answers it, as a published container's
		// address does.
		serverTargets[i], pingTargets[i] = target.String(), target.Addr().String()
	}
	for i := range p.Clients {
		d.targets = append(d.targets, serverTargets[p.ServerOf[i]])
		d.pingTargets = append(d.pingTargets, pingTargets[p.ServerOf[i]])
	}
	return nil
}

// portTries bounds how often a server listens again for a port its host
// does not publish yet. Each try in a fresh namespace collides with
// another server's port about once in 28,000 per server before it.
const portTries = 8

// listenOne has server i's engine listen, on port if not 0, and exposes
// what it got. Servers that pick their ports in namespaces of their own
// may pick one their host already publishes for another (behind nat):
// such a server listens again, its first listener left unused until the
// engine stops.
func (d *nativeDriver) listenOne(ctx context.Context, i, port int, opts engine.SocketOptions) (netip.AddrPort, error) {
	st := d.path.Servers[i]
	addr := st.Endpoint().Addr
	for try := 1; ; try++ {
		got, err := d.servers[i].Client.ListenIn(ctx, d.serverNetns[i], addr.String(), port, opts)
		if err != nil {
			return netip.AddrPort{}, d.servers[i].Describe(fmt.Errorf("listen on %s: %w", addr, err))
		}
		target, err := d.path.Expose(st, got)
		if errors.Is(err, mode.ErrPortTaken) && port == 0 && try < portTries {
			continue
		}
		return target, err
	}
}

func (d *nativeDriver) Stop() error {
	var wg sync.WaitGroup
	stopped := map[*site.Engine]bool{}
	for _, e := range append(append([]*site.Engine{}, d.clients...), d.servers...) {
		if !stopped[e] {
			stopped[e] = true
			wg.Go(e.Stop)
		}
	}
	wg.Wait()
	return nil
}

// socketOptions are a case's knobs as the engine takes them.
func socketOptions(p model.Params) engine.SocketOptions {
	return engine.SocketOptions{MSS: p.MSS, SendBuffer: p.SendBuffer, ReceiveBuffer: p.ReceiveBuffer, CC: p.CC, Nagle: p.NoDelay == "off"}
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
		if spec.RateBPS, spec.RatePPS, err = units.ParseOfferedRate(p.Rate); err != nil {
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

func (d *nativeDriver) Exchange(ctx context.Context, c model.Case, dur time.Duration) (measure.Exchange, error) {
	gather, err := d.Traffic(ctx, c, dur)
	if err != nil {
		return measure.Exchange{}, err
	}
	return gather(ctx)
}

// Traffic runs the case's traffic; what it returns asks the servers what
// they received.
func (d *nativeDriver) Traffic(ctx context.Context, c model.Case, dur time.Duration) (func(context.Context) (measure.Exchange, error), error) {
	spec, err := runSpec(c, dur)
	if err != nil {
		return nil, err
	}
	if searchesRate(c) {
		x, err := d.maxRate(ctx, c, spec)
		return func(context.Context) (measure.Exchange, error) { return x, nil }, err
	}
	results, err := d.runClients(ctx, c, spec)
	if err != nil {
		return nil, d.nameDeaths(err)
	}
	return func(ctx context.Context) (measure.Exchange, error) {
		x, err := d.gather(ctx, c, spec, results)
		return x, d.nameDeaths(err)
	}, nil
}

// nameDeaths adds to an error the engines of the path that have ended: a
// server engine killed mid-sample shows in its client's error only as a
// reset connection.
func (d *nativeDriver) nameDeaths(err error) error {
	if err == nil {
		return nil
	}
	var died []string
	for _, e := range append(slices.Clip(d.servers), d.clients...) {
		if ended := e.Ended(); ended != "" && !strings.Contains(err.Error(), ended) {
			died = append(died, ended)
		}
	}
	if len(died) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(died, "; "))
}

// clientResult is one client endpoint's part of an exchange.
type clientResult struct {
	session uint64
	run     *engine.RunResult
	sess    *engine.SessionResult
	err     error
}

// Prepare connects every client endpoint's flows ahead of the exchange,
// so that the sample's readings frame the traffic alone: at 64 endpoints
// of 16 flows, connecting took a fifth of a second of a 1 s sample, and
// CPU-seconds per GB charged that to the bytes. Ping has no flows, and
// udp_max_rate runs several rounds of its own.
func (d *nativeDriver) Prepare(ctx context.Context, c model.Case, dur time.Duration) error {
	d.ready = nil
	if c.Workload == engine.WorkloadPing || searchesRate(c) {
		return nil
	}
	spec, err := runSpec(c, dur)
	if err != nil {
		return err
	}
	specs := d.clientSpecs(spec)
	errs := make([]error, len(d.clients))
	var wg sync.WaitGroup
	for i, cl := range d.clients {
		wg.Go(func() {
			if err := cl.Client.Connect(ctx, specs[i]); err != nil {
				errs[i] = cl.Describe(fmt.Errorf("connect %s from %s: %w", c.Workload, d.path.Clients[i].Endpoint().Name, err))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return d.nameDeaths(err)
	}
	d.ready = specs
	return nil
}

// searchesRate reports whether the case searches for a rate over rounds
// of its own (udp_max_rate) instead of making one exchange.
func searchesRate(c model.Case) bool {
	return workload.Get(c.Workload).Shape == workload.MaxRateSearch
}

// clientSpecs gives each client endpoint its own session and target.
func (d *nativeDriver) clientSpecs(spec engine.RunSpec) []engine.RunSpec {
	specs := make([]engine.RunSpec, len(d.clients))
	for i := range specs {
		s := spec
		s.Session = sessionCounter.Add(1)
		s.Target, s.Netns = d.targets[i], d.clientNetns[i]
		if d.sharedClients {
			s.Endpoint = d.path.Clients[i].Endpoint().Name
		}
		if s.Workload == engine.WorkloadPing {
			s.Target = d.pingTargets[i]
		}
		specs[i] = s
	}
	return specs
}

// sameRun reports whether a client's readied run is spec's.
func sameRun(ready, spec engine.RunSpec) bool {
	ready.Session, ready.Target, ready.Netns, ready.Endpoint = spec.Session, spec.Target, spec.Netns, spec.Endpoint
	return ready == spec
}

// round runs spec from every client endpoint at once, each against its
// server, and adds up what they saw.
func (d *nativeDriver) round(ctx context.Context, c model.Case, spec engine.RunSpec) (measure.Exchange, error) {
	results, err := d.runClients(ctx, c, spec)
	if err != nil {
		return measure.Exchange{}, err
	}
	return d.gather(ctx, c, spec, results)
}

// runClients runs spec from every client endpoint at once, each against
// its server; flows connected ahead by Prepare start at once. It returns
// when every flow has ended on both sides.
func (d *nativeDriver) runClients(ctx context.Context, c model.Case, spec engine.RunSpec) ([]clientResult, error) {
	results := make([]clientResult, len(d.clients))
	specs := d.ready
	d.ready = nil
	if len(specs) == 0 || !sameRun(specs[0], spec) {
		specs = d.clientSpecs(spec)
	}
	var wg sync.WaitGroup
	for i, cl := range d.clients {
		wg.Go(func() {
			s := specs[i]
			r := &results[i]
			r.session = s.Session
			if r.run, r.err = cl.Client.Run(ctx, s); r.err != nil {
				r.err = cl.Describe(fmt.Errorf("run %s from %s against %s: %w", c.Workload, d.path.Clients[i].Endpoint().Name, s.Target, r.err))
			}
		})
	}
	wg.Wait()
	return results, joinErrs(results)
}

// gather asks each client's server what it received of the client's
// session, where the workload's results need that, and adds up what both
// sides saw.
func (d *nativeDriver) gather(ctx context.Context, c model.Case, spec engine.RunSpec, results []clientResult) (measure.Exchange, error) {
	if spec.Workload != engine.WorkloadTCPCRR && spec.Workload != engine.WorkloadPing {
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() {
				r := &results[i]
				srv := d.servers[d.path.ServerOf[i]]
				if r.sess, r.err = srv.Client.Collect(ctx, r.session, 10*time.Second); r.err != nil {
					r.err = srv.Describe(fmt.Errorf("collect session %d: %w", r.session, r.err))
				}
			})
		}
		wg.Wait()
		if err := joinErrs(results); err != nil {
			return measure.Exchange{}, err
		}
	}
	return d.combine(c, spec, results)
}

func joinErrs(results []clientResult) error {
	var errs []error
	for _, r := range results {
		errs = append(errs, r.err)
	}
	return errors.Join(errs...)
}

// combine adds up the client endpoints' results.
func (d *nativeDriver) combine(c model.Case, spec engine.RunSpec, results []clientResult) (measure.Exchange, error) {
	var x measure.Exchange
	var hists []*hdrhistogram.Histogram
	var rtt rttSum
	var span receiveSpan
	for i, r := range results {
		span.add(r.sess)
		span.addSender(r.run, i == 0)
		if len(r.run.LatencyHDR) > 0 {
			h, err := hdrhistogram.Decode(r.run.LatencyHDR)
			if err != nil {
				return x, fmt.Errorf("decode latency histogram: %w", err)
			}
			hists = append(hists, h)
		}
		if err := addClient(&x, spec.Workload, r, len(results), &rtt); err != nil {
			return x, err
		}
	}
	switch len(hists) {
	case 0:
	case 1:
		x.LatencyHDR = results[0].run.LatencyHDR
	default:
		merged := hists[0]
		for _, h := range hists[1:] {
			merged.Merge(h)
		}
		enc, err := merged.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return x, fmt.Errorf("encode latency histogram: %w", err)
		}
		x.LatencyHDR = enc
	}
	x.RTT = rtt.stats()
	span.apply(&x, spec.Workload, d.path.OnThisMachine())
	// One pair of a stream or request/response without a pattern has no
	// aggregate to report beyond its own figures.
	if !d.path.Multi() && c.Params.Pattern == "" && (c.Workload == "tcp_stream" || c.Workload == "tcp_rr") {
		x.PerEndpoint = nil
	}
	return x, nil
}

// addClient adds one of n client endpoints' results to x.
func addClient(x *measure.Exchange, workload string, r clientResult, n int, rtt *rttSum) error {
	run := r.run
	if r.sess != nil {
		r.sess.ReceivedBytes *= misreportBytes
	}
	x.SentBytes += run.SentBytes
	x.Transactions += run.Transactions
	x.TxTime = max(x.TxTime, run.Elapsed)
	if run.RetransmitsKnown {
		x.Retransmits += run.Retransmits
		x.RetransmitsKnown = true
	}
	if run.RetransmittedBytesKnown {
		x.RetransmittedBytes += run.RetransmittedBytes
		x.RetransmittedBytesKnown = true
	}
	var rate float64
	switch workload {
	case engine.WorkloadTCPStream, engine.WorkloadUDPStream:
		if r.sess.Elapsed > 0 {
			rate = float64(r.sess.ReceivedBytes) * 8 / r.sess.Elapsed.Seconds()
			for _, b := range r.sess.FlowBytes {
				x.PerFlow = append(x.PerFlow, float64(b*misreportBytes)*8/r.sess.Elapsed.Seconds())
			}
		}
		x.ThroughputBPS += rate
	default:
		if run.Elapsed > 0 {
			rate = float64(run.Transactions) / run.Elapsed.Seconds()
		}
		x.TxPerS += rate
	}
	if workload != engine.WorkloadPing {
		x.PerEndpoint = append(x.PerEndpoint, rate)
	}
	if s := r.sess; s != nil {
		x.ReceivedBytes += s.ReceivedBytes
		x.ReceiveTime = max(x.ReceiveTime, s.Elapsed)
		x.Intervals = addIntervals(x.Intervals, s.Intervals)
	}
	switch workload {
	case engine.WorkloadUDPStream:
		s := r.sess
		if s.PeerSent != run.SentPackets {
			return fmt.Errorf("the listener heard of %d datagrams sent, the client sent %d", s.PeerSent, run.SentPackets)
		}
		x.SentPackets += run.SentPackets
		x.ReceivedPackets += s.Packets
		x.Lost += s.PeerLost
		x.OutOfOrder += s.OutOfOrder
		x.JitterNS += s.JitterNS / float64(n)
	case engine.WorkloadUDPRR:
		x.SentPackets += run.SentPackets
		x.ReceivedPackets += r.sess.Packets
		x.Tried += run.SentPackets
		x.Unanswered += run.Lost
	case engine.WorkloadPing:
		x.Tried += run.SentPackets
		x.Unanswered += run.Lost
		rtt.add(run.Transactions, run.RTT)
	}
	return nil
}

// receiveSpan is the time from the first byte any server received in an
// exchange to the last, on the wall clock the engines of one machine
// share; where the clients' engines share it too, it starts instead when
// the first client began to send, if that was earlier.
type receiveSpan struct {
	first, last time.Time
	sessions    int
	unknown     bool
	began       time.Time
	beganKnown  bool
}

func (s *receiveSpan) add(r *engine.SessionResult) {
	if r == nil {
		return
	}
	if r.ClockOrigin.IsZero() || r.ReceivedBytes == 0 {
		s.unknown = s.unknown || r.ClockOrigin.IsZero()
		return
	}
	first, last := r.ClockOrigin.Add(r.FirstByte), r.ClockOrigin.Add(r.LastByte)
	if s.sessions == 0 || first.Before(s.first) {
		s.first = first
	}
	if s.sessions == 0 || last.After(s.last) {
		s.last = last
	}
	s.sessions++
}

// addSender notes when a client began to send; a client that did not say
// leaves the start at the first byte.
func (s *receiveSpan) addSender(r *engine.RunResult, first bool) {
	switch {
	case r == nil || r.Began.IsZero():
		s.began, s.beganKnown = time.Time{}, false
	case first:
		s.began, s.beganKnown = r.Began, true
	case s.beganKnown && r.Began.Before(s.began):
		s.began = r.Began
	}
}

// apply makes a stream of several client endpoints report the rate the
// path carried: every byte received over the time from the first byte
// sent (or, across machines, received) to the last received. The
// endpoints' own rates, each over its own first-to-last byte, add up to
// more where their spans do not overlap, as 64 endpoints starting 16
// flows each on two cores do not: their sum read 31 Gbit/s for 8.5
// Gbit/s received. The first byte received is late where the machine
// has more flows than cores: at 64 endpoints of 16 flows the first
// byte most servers read came 0.3 to 1.2 s into a 1 s run, their socket
// buffers full, and a span from the first byte left out the time the
// senders spent filling them. Each endpoint's rate stays in PerEndpoint.
func (s *receiveSpan) apply(x *measure.Exchange, workload string, sharedClock bool) {
	if s.sessions < 2 || s.unknown || (workload != engine.WorkloadTCPStream && workload != engine.WorkloadUDPStream) {
		return
	}
	first := s.first
	if sharedClock && s.beganKnown && s.began.Before(first) {
		first = s.began
	}
	span := s.last.Sub(first)
	if span <= 0 {
		return
	}
	x.ReceiveTime = span
	x.ThroughputBPS = float64(x.ReceivedBytes) * 8 / span.Seconds()
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
// offered rate, starting at the delivered one, for at most MaxRateTrials
// trials in all, each as long as a sample. While nothing above a passing
// rate has failed yet, the next step goes at most a quarter higher: the
// answer is rarely far above what the path delivered, and halving from
// an unpaced sender's rate would spend the trials far above it. The
// sample holds the passing trial with the highest rate, and every trial
// as an interval.
func (d *nativeDriver) maxRate(ctx context.Context, c model.Case, spec engine.RunSpec) (measure.Exchange, error) {
	threshold := c.Params.LossThresholdPct
	if threshold <= 0 {
		threshold = workload.Get(c.Workload).Defaults.LossThresholdPct
	}
	flows := float64(spec.Flows * len(d.clients))
	began := time.Now()
	var trials []model.Interval
	trial := func(ratePerFlow int64) (measure.Exchange, float64, float64, error) {
		s := spec
		s.RateBPS, s.RatePPS = ratePerFlow, 0
		start := time.Since(began)
		x, err := d.round(ctx, c, s)
		if err != nil {
			return x, 0, 0, fmt.Errorf("trial %d at %d bit/s per flow: %w", len(trials)+1, ratePerFlow, err)
		}
		offered := float64(ratePerFlow) * flows
		if ratePerFlow == 0 && x.TxTime > 0 {
			offered = float64(x.SentBytes) * 8 / x.TxTime.Seconds()
		}
		loss := 0.0
		if x.SentPackets > 0 {
			loss = 100 * float64(x.Lost) / float64(x.SentPackets)
		}
		trials = append(trials, model.Interval{
			StartMS: start.Milliseconds(), EndMS: time.Since(began).Milliseconds(),
			Bytes: x.ReceivedBytes, BPS: x.ThroughputBPS, Packets: x.ReceivedPackets, Lost: x.Lost,
			OfferedBPS: offered, LossPct: loss,
		})
		return x, offered, loss, nil
	}
	first, offered, loss, err := trial(0)
	if err != nil {
		return measure.Exchange{}, err
	}
	best, bestRate := first, -1.0
	if loss < threshold {
		bestRate = offered
	} else {
		ceiling := offered / flows
		lo, hi := 0.0, ceiling
		rate := first.ThroughputBPS / flows
		for len(trials) < MaxRateTrials && rate >= 1 {
			x, offered, loss, err := trial(int64(rate))
			if err != nil {
				return measure.Exchange{}, err
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
	best.MaxRateBPS = max(0, bestRate)
	best.Trials = len(trials)
	best.Intervals = trials
	return best, nil
}
