package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// engine is the state behind one Serve call.
type engine struct {
	ctx       context.Context // canceled when the engine stops
	cancel    context.CancelCauseFunc
	sockets   *socketSet
	sessions  *sessionTable
	receivers receivePool

	outMu sync.Mutex
	out   io.Writer

	mu       sync.Mutex
	stopping bool
	// ready holds the runs connected ahead, waiting for their start, by
	// the endpoint they are for (readyKey).
	ready map[string]*launch

	// work counts request handlers, accept loops and data connections.
	work sync.WaitGroup
}

// errOutputFailed cancels the engine when responses can no longer be sent.
var errOutputFailed = errors.New("engine output failed")

// Serve runs an engine: it reads one JSON Request per line from in and
// writes one JSON Response per line to out. Requests other than quit are
// handled concurrently. Serve returns nil after a quit request or at the
// end of in; before returning it closes its listeners, aborts all flows and
// waits for them. If ctx ends first, Serve stops the same way and returns
// ctx's error, leaving a goroutine blocked reading in until in yields.
func Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	keepASpareP()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	e := &engine{
		ctx:      ctx,
		cancel:   cancel,
		sockets:  newSocketSet(),
		sessions: newSessionTable(),
		ready:    map[string]*launch{},
		out:      out,
	}
	lines := make(chan inputLine)
	go readLines(ctx, in, lines)
	for {
		var line inputLine
		select {
		case <-ctx.Done():
			e.stop()
			return context.Cause(ctx)
		case line = <-lines:
		}
		if line.err != nil {
			e.stop()
			if line.err == io.EOF {
				return nil
			}
			return fmt.Errorf("read requests: %w", line.err)
		}
		if line.tooLong {
			e.respond(Response{Error: fmt.Sprintf("request line longer than %d bytes", MaxLineSize)})
			continue
		}
		req, err := DecodeRequest(line.data)
		if err != nil {
			e.respond(Response{ID: req.ID, Error: err.Error()})
			continue
		}
		if req.Op == OpQuit {
			e.stop()
			e.respond(Response{ID: req.ID, OK: true})
			return nil
		}
		e.work.Add(1)
		go func() {
			defer e.work.Done()
			e.respond(e.handle(req))
		}()
	}
}

func (e *engine) handle(req Request) Response {
	var resp Response
	var err error
	switch req.Op {
	case OpListen:
		resp.Port, err = e.listen(req.Addr, req.Port, req.Netns, req.SocketOptions)
	case OpRun:
		resp, err = e.run(e.ctx, req.RunSpec)
	case OpConnect:
		err = e.connectAhead(e.ctx, req.RunSpec)
	case OpCollect:
		var r SessionResult
		r, err = e.sessions.collect(e.ctx, req.Session, time.Duration(req.TimeoutMS)*time.Millisecond)
		resp = Response{
			ReceivedBytes:     r.ReceivedBytes,
			FirstByteNS:       int64(r.FirstByte),
			LastByteNS:        int64(r.LastByte),
			ClockOriginUnixNS: clockOrigin.UnixNano(),
			ElapsedNS:         int64(r.Elapsed),
			Flows:             r.Flows,
			FlowBytes:         r.FlowBytes,
			Transactions:      r.Transactions,
			Intervals:         r.Intervals,
			Packets:           r.Packets,
			PeerSent:          r.PeerSent,
			PeerLost:          r.PeerLost,
			OutOfOrder:        r.OutOfOrder,
			JitterNS:          r.JitterNS,
		}
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	if err != nil {
		if e.ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", errStopped, err)
		}
		return Response{ID: req.ID, Error: err.Error()}
	}
	resp.ID, resp.OK = req.ID, true
	return resp
}

// respond writes one response line. A failed write stops the engine: the
// runner can no longer hear from it.
func (e *engine) respond(resp Response) {
	line, err := json.Marshal(resp)
	if err != nil {
		line, _ = json.Marshal(Response{ID: resp.ID, Error: "encode response: " + err.Error()})
	}
	line = append(line, '\n')
	e.outMu.Lock()
	defer e.outMu.Unlock()
	if _, err := e.out.Write(line); err != nil {
		e.cancel(fmt.Errorf("%w: %w", errOutputFailed, err))
	}
}

// stop shuts the listeners and every flow down and waits for all work.
func (e *engine) stop() {
	e.cancel(nil)
	e.mu.Lock()
	e.stopping = true
	ready := e.ready
	e.ready = map[string]*launch{}
	e.mu.Unlock()
	for _, l := range ready {
		l.abort()
	}
	e.sockets.stop()
	e.receivers.stop()
	e.work.Wait()
}
