package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
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
	retransmitsKnown   bool
	err                error
}

// run is the client side of a workload: it connects every flow first, then
// starts them together and runs them to a shared monotonic deadline.
func (e *engine) run(ctx context.Context, spec RunSpec) (Response, error) {
	if spec.Flows > maxLiveSockets {
		return Response{}, fmt.Errorf("%d flows exceed the engine's limit of %d", spec.Flows, maxLiveSockets)
	}
	socks, err := e.connectFlows(ctx, spec)
	if err != nil {
		return Response{}, err
	}

	var streamBuf []byte
	if spec.Workload == WorkloadTCPStream {
		// Shared by all flows: senders only read it.
		streamBuf = make([]byte, spec.MsgSize)
	}
	outcomes := make([]flowOutcome, len(socks))
	for i := range outcomes {
		if spec.Workload == WorkloadTCPRR {
			outcomes[i].latency = newLatencyHistogram()
		}
	}

	var ready, finished sync.WaitGroup
	start := make(chan struct{})
	var deadline int64
	ready.Add(len(socks))
	finished.Add(len(socks))
	for i, sock := range socks {
		go func() {
			defer finished.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			defer sock.close()
			ready.Done()
			<-start
			outcomes[i] = runFlow(sock.fd, spec, deadline, streamBuf, outcomes[i].latency)
		}()
	}
	// Start only once every flow sits on its own thread, so that thread
	// creation does not eat into the first flows' measured time.
	ready.Wait()
	began := monotonicNow()
	deadline = began + spec.DurationMS*int64(time.Millisecond)
	close(start)
	finished.Wait()

	var resp Response
	var retrans int64
	var retransKnown bool
	var latency *hdrhistogram.Histogram
	var stoppedAt int64
	for i, o := range outcomes {
		if o.err != nil {
			return Response{}, fmt.Errorf("flow %d: %w", i, o.err)
		}
		resp.SentBytes += o.sent
		resp.Transactions += o.transactions
		stoppedAt = max(stoppedAt, o.stoppedAt)
		if o.retransmitsKnown {
			retrans += o.retransmits
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
	if retransKnown {
		resp.TCPRetransmits = &retrans
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
func runFlow(fd int, spec RunSpec, deadline int64, streamBuf []byte, latency *hdrhistogram.Histogram) flowOutcome {
	var o flowOutcome
	if spec.Workload == WorkloadTCPRR {
		rr := rrOutcome{latency: latency}
		o.err = runRR(fd, spec, deadline, &rr)
		o.sent, o.transactions, o.stoppedAt, o.latency = rr.sent, rr.transactions, rr.stoppedAt, rr.latency
	} else {
		o.sent, o.stoppedAt, o.err = sendStream(fd, streamBuf, spec.Flows, deadline)
	}
	if o.err != nil {
		return o
	}
	// Waiting for the listener's close means the receiver has counted
	// every byte by the time run answers, so collect need not wait.
	o.err = drainUntilClosed(fd)
	o.retransmits, o.retransmitsKnown = retransmits(fd)
	return o
}

// connectFlows opens all flows concurrently and sends their headers.
func (e *engine) connectFlows(ctx context.Context, spec RunSpec) ([]*dataSocket, error) {
	socks := make([]*dataSocket, spec.Flows)
	errs := make([]error, spec.Flows)
	var wg sync.WaitGroup
	for i := range socks {
		wg.Go(func() {
			socks[i], errs[i] = e.connectFlow(ctx, spec, i)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, s := range socks {
			if s != nil {
				s.close()
			}
		}
		return nil, err
	}
	return socks, nil
}

func (e *engine) connectFlow(ctx context.Context, spec RunSpec, index int) (*dataSocket, error) {
	dialer := net.Dialer{Timeout: dialTimeout}
	conn, err := dialer.DialContext(ctx, "tcp", spec.Target)
	if err != nil {
		return nil, fmt.Errorf("flow %d: connect: %w", index, err)
	}
	tcp := conn.(*net.TCPConn)
	h := connHeader{
		kind:         kindOf(spec.Workload),
		session:      spec.Session,
		flowIndex:    uint32(index),
		flowCount:    uint32(spec.Flows),
		requestSize:  uint32(spec.RequestSize),
		responseSize: uint32(spec.ResponseSize),
	}
	tcp.SetWriteDeadline(time.Now().Add(headerTimeout))
	if _, err := tcp.Write(h.marshal()); err != nil {
		tcp.Close()
		return nil, fmt.Errorf("flow %d: send header: %w", index, err)
	}
	fd, err := detach(tcp)
	if err != nil {
		return nil, fmt.Errorf("flow %d: %w", index, err)
	}
	sock, err := e.sockets.adopt(fd)
	if err != nil {
		return nil, fmt.Errorf("flow %d: %w", index, err)
	}
	if err := configureSocket(fd, spec.Workload == WorkloadTCPRR || spec.NoDelay, clientSocketTimeout); err != nil {
		sock.close()
		return nil, fmt.Errorf("flow %d: %w", index, err)
	}
	return sock, nil
}

func configureSocket(fd int, noDelay bool, timeout time.Duration) error {
	if err := setNoDelay(fd, noDelay); err != nil {
		return err
	}
	return setTimeouts(fd, timeout)
}
