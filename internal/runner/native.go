package runner

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync/atomic"
	"time"

	"cnbench/internal/agent"
	"cnbench/internal/engine"
	"cnbench/internal/model"
)

// nativeDriver runs cnbench's own engine: one long-lived `cnbench engine`
// process per endpoint, controlled over its stdin and stdout.
type nativeDriver struct {
	server, client *nativeEngine
	target         string
}

type nativeEngine struct {
	proc   *proc
	client *engine.Client
	// remote is the engine on an agent's machine; proc is nil then.
	remote *agent.RemoteEngine
}

var sessionCounter atomic.Uint64

func newNativeDriver(ctx context.Context, s driverSetup, c model.Case) (d driver, err error) {
	if s.server.group != nil {
		return newGroupDriver(ctx, s, c)
	}
	if c.Workload != "tcp_stream" && c.Workload != "tcp_rr" {
		return nil, fmt.Errorf("%w: %s on endpoints placed by agents: they run tcp_stream and tcp_rr", errEngineCannot, c.Workload)
	}
	nd := &nativeDriver{}
	defer func() {
		if err != nil {
			err = errors.Join(err, nd.stop())
		}
	}()
	if nd.server, err = startNativeEngine(s.server, s.engineCommand); err != nil {
		return nil, err
	}
	if nd.client, err = startNativeEngine(s.client, s.engineCommand); err != nil {
		return nil, err
	}
	port, err := nd.server.client.Listen(ctx, s.server.ep.Addr.String(), s.listenPort)
	if err != nil {
		return nil, nd.server.proc.describe(fmt.Errorf("listen on %s: %w", s.server.ep.Addr, err))
	}
	target, err := s.expose(port)
	if err != nil {
		return nil, err
	}
	nd.target = target.String()
	return nd, nil
}

func startNativeEngine(s *slot, command []string) (*nativeEngine, error) {
	if s.agent != nil {
		return s.agent.startEngine()
	}
	if s.guest != nil {
		return s.guest.startEngine(s)
	}
	ne := &nativeEngine{}
	p, err := s.start(command, func(cmd *exec.Cmd) error {
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		cmd.Stdout = nil
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		ne.client = engine.NewClient(stdin, stdout)
		return nil
	})
	if err != nil {
		return nil, err
	}
	ne.proc = p
	return ne, nil
}

// stop asks an engine to quit: it also exits when its stdin closes, and is
// killed if it has not within a second.
func (ne *nativeEngine) stop() {
	if ne == nil {
		return
	}
	if ne.remote != nil {
		_ = ne.remote.Stop(time.Second)
		return
	}
	_ = ne.client.Quit()
	ne.proc.stopWithin(time.Second)
}

func (d *nativeDriver) stop() error {
	d.client.stop()
	d.server.stop()
	return nil
}

func (d *nativeDriver) exchange(ctx context.Context, c model.Case, dur time.Duration) (exchange, error) {
	spec := engine.RunSpec{
		Workload:     c.Workload,
		Target:       d.target,
		Session:      sessionCounter.Add(1),
		Flows:        c.Params.Flows,
		MsgSize:      c.Params.MsgSize,
		RequestSize:  c.Params.RequestSize,
		ResponseSize: c.Params.ResponseSize,
		DurationMS:   dur.Milliseconds(),
		NoDelay:      c.Workload == "tcp_rr",
	}
	run, err := d.client.client.Run(ctx, spec)
	if err != nil {
		return exchange{}, d.client.proc.describe(fmt.Errorf("run %s against %s: %w", c.Workload, d.target, err))
	}
	sess, err := d.server.client.Collect(ctx, spec.Session, 10*time.Second)
	if err != nil {
		return exchange{}, d.server.proc.describe(fmt.Errorf("collect session %d: %w", spec.Session, err))
	}
	return exchange{
		sentBytes:        run.SentBytes,
		receivedBytes:    sess.ReceivedBytes,
		receiveTime:      sess.Elapsed,
		intervals:        sess.Intervals,
		transactions:     run.Transactions,
		txTime:           run.Elapsed,
		latencyHDR:       run.LatencyHDR,
		retransmits:      run.Retransmits,
		retransmitsKnown: run.RetransmitsKnown,
	}, nil
}
