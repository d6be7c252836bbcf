package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// quitTimeout bounds how long Quit waits for the engine to wind down.
const quitTimeout = 10 * time.Second

// maxResponseLine is the longest response line the client reads; a long
// run's intervals and a wide latency histogram stay well below it.
const maxResponseLine = 64 << 20

// ErrClientClosed is returned for calls after the engine's output ended.
var ErrClientClosed = errors.New("engine connection closed")

// RemoteError is an error the engine reported for a request.
type RemoteError struct {
	Message string
}

func (e *RemoteError) Error() string { return e.Message }

// Client drives one engine over its stdin and stdout. It is safe for
// concurrent use; responses are matched to calls by request id.
type Client struct {
	nextID atomic.Uint64

	quitOnce sync.Once
	quitErr  error

	writeMu sync.Mutex
	stdin   io.WriteCloser

	mu      sync.Mutex
	pending map[uint64]chan Response
	readErr error         // why the reader stopped; set before done closes
	done    chan struct{} // closed when the reader stops
}

// NewClient starts reading responses from stdout in the background.
func NewClient(stdin io.WriteCloser, stdout io.Reader) *Client {
	c := &Client{
		stdin:   stdin,
		pending: make(map[uint64]chan Response),
		done:    make(chan struct{}),
	}
	go c.readResponses(stdout)
	return c
}

func (c *Client) readResponses(stdout io.Reader) {
	r := bufio.NewReaderSize(stdout, 64<<10)
	err := func() error {
		for {
			line, tooLong, err := readLineLimit(r, maxResponseLine)
			if tooLong {
				return fmt.Errorf("response line longer than %d bytes", maxResponseLine)
			}
			if len(line) > 0 {
				var resp Response
				if jerr := json.Unmarshal(line, &resp); jerr != nil {
					return fmt.Errorf("bad response from engine: %w", jerr)
				}
				c.deliver(resp)
			}
			if err != nil {
				return err
			}
		}
	}()
	if err == io.EOF {
		err = ErrClientClosed
	} else {
		err = fmt.Errorf("%w: %w", ErrClientClosed, err)
	}
	c.mu.Lock()
	c.readErr = err
	c.mu.Unlock()
	close(c.done)
}

// deliver hands a response to its caller; responses nobody waits for
// (their call was canceled) are dropped.
func (c *Client) deliver(resp Response) {
	c.mu.Lock()
	ch, ok := c.pending[resp.ID]
	delete(c.pending, resp.ID)
	c.mu.Unlock()
	if ok {
		ch <- resp
	}
}

// call sends req with a fresh id and waits for its response.
func (c *Client) call(ctx context.Context, req Request) (Response, error) {
	req.ID = c.nextID.Add(1)
	line, err := json.Marshal(req)
	if err != nil {
		return Response{}, fmt.Errorf("encode %s request: %w", req.Op, err)
	}
	line = append(line, '\n')

	ch := make(chan Response, 1)
	c.mu.Lock()
	c.pending[req.ID] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, req.ID)
		c.mu.Unlock()
	}()

	// The write happens on its own goroutine so that a stalled engine
	// cannot hold the caller past ctx.
	written := make(chan error, 1)
	go func() {
		c.writeMu.Lock()
		defer c.writeMu.Unlock()
		_, err := c.stdin.Write(line)
		written <- err
	}()
	select {
	case err := <-written:
		if err != nil {
			return Response{}, fmt.Errorf("send %s request: %w", req.Op, err)
		}
	case <-ctx.Done():
		return Response{}, fmt.Errorf("%s: %w", req.Op, ctx.Err())
	}

	select {
	case resp := <-ch:
		if !resp.OK {
			return resp, &RemoteError{Message: resp.Error}
		}
		return resp, nil
	case <-ctx.Done():
		return Response{}, fmt.Errorf("%s: %w", req.Op, ctx.Err())
	case <-c.done:
		// The reader may have delivered the response just before it stopped.
		select {
		case resp := <-ch:
			if !resp.OK {
				return resp, &RemoteError{Message: resp.Error}
			}
			return resp, nil
		default:
		}
		c.mu.Lock()
		err := c.readErr
		c.mu.Unlock()
		return Response{}, fmt.Errorf("%s: %w", req.Op, err)
	}
}

// Listen starts a data listener on addr:port (port 0 picks a free one) and
// returns its port.
func (c *Client) Listen(ctx context.Context, addr string, port int) (int, error) {
	return c.ListenWith(ctx, addr, port, SocketOptions{})
}

// ListenWith is Listen with socket options for everything the listener
// serves.
func (c *Client) ListenWith(ctx context.Context, addr string, port int, o SocketOptions) (int, error) {
	return c.ListenIn(ctx, "", addr, port, o)
}

// ListenIn is ListenWith in the network namespace at netns (see
// RunSpec.Netns); empty is the engine's own.
func (c *Client) ListenIn(ctx context.Context, netns, addr string, port int, o SocketOptions) (int, error) {
	resp, err := c.call(ctx, Request{Op: OpListen, Addr: addr, Port: port, RunSpec: RunSpec{SocketOptions: o, Netns: netns}})
	if err != nil {
		return 0, fmt.Errorf("engine listen on %s port %d: %w", addr, port, err)
	}
	return resp.Port, nil
}

// Run runs a workload from this engine against a listener and returns the
// client side's account of it. It returns once the listener has closed all
// flows, so a following Collect finds the session complete.
func (c *Client) Run(ctx context.Context, spec RunSpec) (*RunResult, error) {
	resp, err := c.call(ctx, Request{Op: OpRun, RunSpec: spec})
	if err != nil {
		return nil, fmt.Errorf("engine run %s to %s: %w", spec.Workload, spec.Target, err)
	}
	r := &RunResult{
		SentBytes:    resp.SentBytes,
		Elapsed:      time.Duration(resp.ElapsedNS),
		Transactions: resp.Transactions,
	}
	if resp.BeganNS != 0 && resp.ClockOriginUnixNS != 0 {
		r.Began = time.Unix(0, resp.ClockOriginUnixNS).Add(time.Duration(resp.BeganNS))
	}
	if resp.LatencyHDR != "" {
		r.LatencyHDR = []byte(resp.LatencyHDR)
	}
	if resp.TCPRetransmits != nil {
		r.Retransmits, r.RetransmitsKnown = *resp.TCPRetransmits, true
	}
	if resp.TCPRetransmittedBytes != nil {
		r.RetransmittedBytes, r.RetransmittedBytesKnown = *resp.TCPRetransmittedBytes, true
	}
	r.SentPackets, r.Lost, r.RTT = resp.SentPackets, resp.Lost, resp.RTT
	return r, nil
}

// Connect readies a run ahead: its flows connected and waiting, so that
// the Run of the same spec that follows starts them at once.
func (c *Client) Connect(ctx context.Context, spec RunSpec) error {
	if _, err := c.call(ctx, Request{Op: OpConnect, RunSpec: spec}); err != nil {
		return fmt.Errorf("engine connect %s to %s: %w", spec.Workload, spec.Target, err)
	}
	return nil
}

// Collect waits up to timeout for every flow of session to close on this
// engine's listeners, then returns what they received. The engine forgets
// the session afterwards.
func (c *Client) Collect(ctx context.Context, session uint64, timeout time.Duration) (*SessionResult, error) {
	timeoutMS := max(1, timeout.Milliseconds())
	resp, err := c.call(ctx, Request{Op: OpCollect, RunSpec: RunSpec{Session: session}, TimeoutMS: timeoutMS})
	if err != nil {
		return nil, fmt.Errorf("engine collect session %d: %w", session, err)
	}
	var origin time.Time
	if resp.ClockOriginUnixNS != 0 {
		origin = time.Unix(0, resp.ClockOriginUnixNS)
	}
	return &SessionResult{
		ClockOrigin:   origin,
		ReceivedBytes: resp.ReceivedBytes,
		FirstByte:     time.Duration(resp.FirstByteNS),
		LastByte:      time.Duration(resp.LastByteNS),
		Elapsed:       time.Duration(resp.ElapsedNS),
		Flows:         resp.Flows,
		FlowBytes:     resp.FlowBytes,
		Transactions:  resp.Transactions,
		Intervals:     resp.Intervals,
		Packets:       resp.Packets,
		PeerSent:      resp.PeerSent,
		PeerLost:      resp.PeerLost,
		OutOfOrder:    resp.OutOfOrder,
		JitterNS:      resp.JitterNS,
	}, nil
}

// Quit asks the engine to stop, waits for its answer (at most quitTimeout)
// and closes its stdin. The Client is unusable afterwards; further calls to
// Quit return the first one's result.
func (c *Client) Quit() error {
	c.quitOnce.Do(func() { c.quitErr = c.quit() })
	return c.quitErr
}

func (c *Client) quit() error {
	ctx, cancel := context.WithTimeout(context.Background(), quitTimeout)
	defer cancel()
	_, err := c.call(ctx, Request{Op: OpQuit})
	// Not under writeMu: a write stuck on a stalled engine must not keep
	// its input open.
	closeErr := c.stdin.Close()
	if err != nil {
		return fmt.Errorf("engine quit: %w", err)
	}
	if closeErr != nil {
		return fmt.Errorf("engine quit: close input: %w", closeErr)
	}
	return nil
}
