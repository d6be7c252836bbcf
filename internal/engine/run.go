package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/netns"
	"cnbench/internal/workload"
)

const (
	dialTimeout   = 10 * time.Second
	headerTimeout = 10 * time.Second
)

// flowOutcome is what one client flow did.
type flowOutcome struct {
	sent, transactions int64
	stoppedAt          int64
	latency            *hdrhistogram.Histogram
	retransmits        int64
	retransmittedBytes int64
	retransmitsKnown   bool
	packets, lost      int64
	err                error
}

// clientFlow is one flow's sockets: the TCP connection (the data for TCP
// workloads, the control for UDP ones) and the UDP socket; for tcp_crr a
// holder of each transaction's connection.
type clientFlow struct {
	index int
	tcp   *dataSocket
	udp   *dataSocket
}

func (f *clientFlow) close() {
	if f.tcp != nil {
		f.tcp.close()
	}
	if f.udp != nil {
		f.udp.close()
	}
}

// run is the client side of a workload: it connects every flow first,
// unless a connect request did so ahead, then starts them together and
// runs them to a shared monotonic deadline.
func (e *engine) run(ctx context.Context, spec RunSpec) (Response, error) {
	if spec.Workload == WorkloadPing {
		return e.ping(spec)
	}
	l, err := e.takeReady(spec)
	if err != nil {
		return Response{}, err
	}
	if l == nil {
		if l, err = e.prepare(ctx, spec); err != nil {
			return Response{}, err
		}
	}
	return l.start()
}

// connectAhead readies spec's run, so that connecting its flows and
// starting their threads happen before whatever frames the run itself:
// at 1024 flows that was a fifth of a second. Each endpoint the engine
// serves (its own, or one a run names: readyKey) holds one readied run;
// one readied earlier there and never started is dropped.
func (e *engine) connectAhead(ctx context.Context, spec RunSpec) error {
	if spec.Workload == WorkloadPing {
		return errors.New("ping has no flows to connect ahead")
	}
	key := readyKey(spec)
	e.dropReady(key)
	l, err := e.prepare(ctx, spec)
	if err != nil {
		return err
	}
	e.mu.Lock()
	refused := e.stopping || e.ready[key] != nil
	if !refused {
		e.ready[key] = l
	}
	e.mu.Unlock()
	if refused {
		l.abort()
		return errors.New("the engine is stopping, or another run was readied at the same time for the same endpoint")
	}
	return nil
}

// takeReady returns the run readied for spec's session, or nil if none
// was; a readied run must be started with the spec it was readied with.
func (e *engine) takeReady(spec RunSpec) (*launch, error) {
	key := readyKey(spec)
	e.mu.Lock()
	l := e.ready[key]
	if l == nil || l.spec.Session != spec.Session {
		e.mu.Unlock()
		return nil, nil
	}
	delete(e.ready, key)
	e.mu.Unlock()
	if l.spec != spec {
		l.abort()
		return nil, fmt.Errorf("session %d was connected ahead for another run", spec.Session)
	}
	return l, nil
}

// readyKey names the endpoint a run is for: by its namespace ("" for the
// engine's own) and, where the run gives one, its name.
func readyKey(spec RunSpec) string {
	return spec.Netns + "\x00" + spec.Endpoint
}

// dropReady aborts the run readied for the endpoint key, if any.
func (e *engine) dropReady(key string) {
	e.mu.Lock()
	l := e.ready[key]
	delete(e.ready, key)
	e.mu.Unlock()
	if l != nil {
		l.abort()
	}
}

// launch is a run's flows, connected, each on its own locked thread,
// waiting for the start.
type launch struct {
	spec     RunSpec
	outcomes []flowOutcome
	begin    chan struct{}
	deadline int64 // zero: aborted
	finished sync.WaitGroup
}

// prepare connects the flows and parks each on its own thread, so that
// thread creation does not eat into the first flows' measured time.
func (e *engine) prepare(ctx context.Context, spec RunSpec) (*launch, error) {
	if perFlow, _ := workload.Get(spec.Workload).SocketsPerFlow(); spec.Flows*perFlow > maxLiveSockets {
		return nil, fmt.Errorf("%d flows exceed the engine's limit of %d sockets", spec.Flows, maxLiveSockets)
	}
	flows, err := e.connectFlows(ctx, spec)
	if err != nil {
		return nil, err
	}
	var streamBuf []byte
	if spec.Workload == WorkloadTCPStream {
		// Shared by all flows: senders only read it.
		streamBuf = make([]byte, spec.MsgSize)
	}
	l := &launch{spec: spec, outcomes: make([]flowOutcome, len(flows)), begin: make(chan struct{})}
	groups := streamGroups(len(flows), len(flows)) // a thread per flow
	if spec.Workload == WorkloadTCPStream {
		groups = streamGroups(len(flows), usableCPUs())
	}
	var ready sync.WaitGroup
	ready.Add(len(groups))
	l.finished.Add(len(groups))
	for _, group := range groups {
		go func() {
			defer l.finished.Done()
			defer holdP()()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for _, i := range group {
				defer flows[i].close()
			}
			var latency *hdrhistogram.Histogram
			if transactional(kindOf(spec.Workload)) {
				latency = newLatencyHistogram()
			}
			ready.Done()
			<-l.begin
			if spec.Workload == WorkloadTCPStream {
				// Locked until now so that its thread was made
				// beforehand; see streamSlice.
				runtime.UnlockOSThread()
			}
			switch {
			case l.deadline == 0:
			case len(group) == 1:
				l.outcomes[group[0]] = runFlow(flows[group[0]], spec, l.deadline, streamBuf, latency)
			default:
				runStreamGroup(flows, group, spec, l.deadline, streamBuf, l.outcomes)
			}
		}()
	}
	ready.Wait()
	return l, nil
}

// runStreamGroup sends a group of stream flows from the calling (locked)
// thread, then closes each one's sending side and waits for the listener
// to finish with it, as runFlow does for one.
func runStreamGroup(flows []*clientFlow, group []int, spec RunSpec, deadline int64, buf []byte, outcomes []flowOutcome) {
	fds := make([]int, len(group))
	for k, i := range group {
		fds[k] = flows[i].tcp.fd
	}
	sent, stoppedAt, err := sendStreams(fds, buf, spec.Flows, deadline, drainBeforeWriting())
	for k, i := range group {
		o := &outcomes[i]
		o.sent, o.stoppedAt, o.err = sent[k], stoppedAt, err
		finishFlow(fds[k], false, o)
	}
}

// start runs the flows to the deadline and sums what they did.
func (l *launch) start() (Response, error) {
	began := monotonicNow()
	l.deadline = began + l.spec.DurationMS*int64(time.Millisecond)
	close(l.begin)
	l.finished.Wait()
	return mergeOutcomes(l.outcomes, began)
}

// abort closes the flows of a launch that will not start.
func (l *launch) abort() {
	close(l.begin)
	l.finished.Wait()
}

// mergeOutcomes sums the flows' outcomes into the run's response; elapsed
// time runs from began to the last flow's stop.
func mergeOutcomes(outcomes []flowOutcome, began int64) (Response, error) {
	var resp Response
	var retrans, retransBytes int64
	var retransKnown bool
	var latency *hdrhistogram.Histogram
	var stoppedAt int64
	for i, o := range outcomes {
		if o.err != nil {
			return Response{}, fmt.Errorf("flow %d: %w", i, o.err)
		}
		resp.SentBytes += o.sent
		resp.Transactions += o.transactions
		resp.SentPackets += o.packets
		resp.Lost += o.lost
		stoppedAt = max(stoppedAt, o.stoppedAt)
		if o.retransmitsKnown {
			retrans += o.retransmits
			retransBytes += o.retransmittedBytes
			retransKnown = true
		}
		if o.latency != nil {
			if latency == nil {
				latency = o.latency
			} else {
				latency.Merge(o.latency)
			}
		}
	}
	resp.ElapsedNS = stoppedAt - began
	resp.BeganNS, resp.ClockOriginUnixNS = began, clockOrigin.UnixNano()
	if retransKnown {
		resp.TCPRetransmits, resp.TCPRetransmittedBytes = &retrans, &retransBytes
	}
	if latency != nil {
		encoded, err := latency.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return Response{}, fmt.Errorf("encode latency histogram: %w", err)
		}
		resp.LatencyHDR = string(encoded)
	}
	return resp, nil
}

// runFlow runs one flow on the calling (locked) thread, then closes its
// sending side and waits for the listener to finish with it.
func runFlow(flow *clientFlow, spec RunSpec, deadline int64, streamBuf []byte, latency *hdrhistogram.Histogram) flowOutcome {
	var o flowOutcome
	fd := flow.tcp.fd
	switch spec.Workload {
	case WorkloadTCPRR:
		rr := rrOutcome{latency: latency}
		o.err = runRR(fd, spec, deadline, &rr)
		o.sent, o.transactions, o.stoppedAt, o.latency = rr.sent, rr.transactions, rr.stoppedAt, rr.latency
	case WorkloadTCPCRR:
		rr := rrOutcome{latency: latency}
		o.err = runCRR(flow.tcp, spec, flowHeader(spec, flow.index), deadline, &rr)
		o.sent, o.transactions, o.stoppedAt, o.latency = rr.sent, rr.transactions, rr.stoppedAt, rr.latency
		// Every connection is closed already; there is nothing to drain.
		return o
	case WorkloadUDPStream:
		buf := make([]byte, spec.MsgSize)
		putDatagramHeader(buf, kindUDPStream, uint32(flow.index), spec.Session)
		var u udpSender
		o.err = sendUDPStream(flow.udp.fd, buf, spec, deadline, &u)
		o.sent, o.packets, o.stoppedAt = u.bytes, u.packets, u.stoppedAt
		if o.err == nil {
			o.err = sendTrailer(fd, u.packets, u.bytes)
		}
	case WorkloadUDPRR:
		request := make([]byte, spec.RequestSize)
		putDatagramHeader(request, kindUDPRR, uint32(flow.index), spec.Session)
		// One byte more than expected tells a truncated datagram apart.
		response := make([]byte, max(spec.ResponseSize, datagramHeaderSize)+1)
		rr := rrOutcome{latency: latency}
		var u udpSender
		o.err = runUDPRR(flow.udp.fd, spec, deadline, &rr, &u, request, response)
		o.sent, o.transactions, o.stoppedAt, o.latency = rr.sent, rr.transactions, rr.stoppedAt, rr.latency
		o.packets, o.lost = u.packets, u.lost
		if o.err == nil {
			o.err = sendTrailer(fd, u.packets, rr.sent)
		}
	default:
		o.sent, o.stoppedAt, o.err = sendStream(fd, streamBuf, spec.Flows, deadline)
	}
	finishFlow(fd, isUDPKind(kindOf(spec.Workload)), &o)
	return o
}

// finishFlow closes the sending side of a flow that ran without error and
// waits for the listener's close: the receiver has then counted every
// byte by the time run answers, so collect need not wait. A TCP flow's
// retransmits are read last.
func finishFlow(fd int, udp bool, o *flowOutcome) {
	if o.err != nil {
		return
	}
	o.err = drainUntilClosed(fd)
	if !udp {
		o.retransmits, o.retransmittedBytes, o.retransmitsKnown = retransmits(fd)
	}
}

func flowHeader(spec RunSpec, index int) connHeader {
	return connHeader{
		kind:         kindOf(spec.Workload),
		session:      spec.Session,
		flowIndex:    uint32(index),
		flowCount:    uint32(spec.Flows),
		requestSize:  uint32(spec.RequestSize),
		responseSize: uint32(spec.ResponseSize),
	}
}

// connectFlows opens all flows concurrently and sends their headers.
func (e *engine) connectFlows(ctx context.Context, spec RunSpec) ([]*clientFlow, error) {
	flows := make([]*clientFlow, spec.Flows)
	errs := make([]error, spec.Flows)
	var wg sync.WaitGroup
	for i := range flows {
		wg.Go(func() {
			flows[i], errs[i] = e.connectFlow(ctx, spec, i)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, f := range flows {
			if f != nil {
				f.close()
			}
		}
		return nil, err
	}
	return flows, nil
}

// connectFlow opens one flow's sockets in the run's namespace.
func (e *engine) connectFlow(ctx context.Context, spec RunSpec, index int) (flow *clientFlow, err error) {
	err = netns.DoAt(spec.Netns, func() error {
		flow, err = e.dialFlow(ctx, spec, index)
		return err
	})
	return flow, err
}

func (e *engine) dialFlow(ctx context.Context, spec RunSpec, index int) (*clientFlow, error) {
	if spec.Workload == WorkloadTCPCRR {
		holder, err := e.sockets.holder()
		if err != nil {
			return nil, fmt.Errorf("flow %d: %w", index, err)
		}
		return &clientFlow{index: index, tcp: holder}, nil
	}
	dialer := net.Dialer{Timeout: dialTimeout, Control: controlOptions(spec.SocketOptions)}
	conn, err := dialer.DialContext(ctx, "tcp", spec.Target)
	if err != nil {
		return nil, fmt.Errorf("flow %d: connect: %w", index, err)
	}
	tcp := conn.(*net.TCPConn)
	tcp.SetDeadline(time.Now().Add(headerTimeout))
	if _, err := tcp.Write(flowHeader(spec, index).marshal()); err != nil {
		tcp.Close()
		return nil, fmt.Errorf("flow %d: send header: %w", index, err)
	}
	udp := isUDPKind(kindOf(spec.Workload))
	if udp {
		// The listener answers once the flow is registered, so that no
		// datagram arrives before it can be counted.
		var ready [1]byte
		if _, err := io.ReadFull(tcp, ready[:]); err != nil {
			tcp.Close()
			return nil, fmt.Errorf("flow %d: wait for the listener: %w", index, err)
		}
	}
	fd, err := detach(tcp)
	if err != nil {
		return nil, fmt.Errorf("flow %d: %w", index, err)
	}
	sock, err := e.sockets.adopt(fd)
	if err != nil {
		return nil, fmt.Errorf("flow %d: %w", index, err)
	}
	flow := &clientFlow{index: index, tcp: sock}
	if udp {
		if flow.udp, err = e.connectUDP(spec); err != nil {
			flow.close()
			return nil, fmt.Errorf("flow %d: %w", index, err)
		}
		// The control connection idles for the whole run.
		if err := setTimeouts(fd, 0); err != nil {
			flow.close()
			return nil, fmt.Errorf("flow %d: %w", index, err)
		}
		return flow, nil
	}
	noDelay := spec.NoDelay || (spec.Workload == WorkloadTCPRR && !spec.Nagle)
	if err := configureSocket(fd, noDelay, clientSocketTimeout); err != nil {
		flow.close()
		return nil, fmt.Errorf("flow %d: %w", index, err)
	}
	return flow, nil
}

// connectUDP opens a flow's UDP socket, connected to the listener so that
// each datagram is one plain send.
//
// Equivalent to: socket(SOCK_DGRAM); connect(TARGET)
func (e *engine) connectUDP(spec RunSpec) (*dataSocket, error) {
	ap, err := netip.ParseAddrPort(spec.Target)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(family(ap.Addr()), unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("udp socket: %w", err)
	}
	sock, err := e.sockets.adopt(fd)
	if err != nil {
		return nil, err
	}
	if err := applyOptions(fd, spec.SocketOptions, false); err != nil {
		sock.close()
		return nil, err
	}
	if err := unix.Connect(fd, sockaddr(ap)); err != nil {
		sock.close()
		return nil, fmt.Errorf("connect udp to %s: %w", ap, err)
	}
	timeout := clientSocketTimeout
	if spec.Workload == WorkloadUDPRR {
		timeout = udpRRTimeout
	}
	if err := setTimeouts(fd, timeout); err != nil {
		sock.close()
		return nil, err
	}
	return sock, nil
}

func configureSocket(fd int, noDelay bool, timeout time.Duration) error {
	if err := setNoDelay(fd, noDelay); err != nil {
		return err
	}
	return setTimeouts(fd, timeout)
}
