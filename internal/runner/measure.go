package runner

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/cpu"
	"cnbench/internal/engine"
	"cnbench/internal/model"
)

// pair is the two engines of a case: the server (receiver of a stream,
// responder of request/response) and the client.
type pair struct {
	server, client *engineProc
	target         string
}

// cpuReading is the CPU time of both sides and of softirq at one moment.
type cpuReading struct {
	at             time.Time
	server, client cpu.Usage
	softirq        time.Duration
}

func (p *pair) readCPU() (cpuReading, error) {
	r := cpuReading{at: time.Now()}
	var err1, err2, err3 error
	r.server, err1 = p.server.usage()
	r.client, err2 = p.client.usage()
	r.softirq, err3 = cpu.Softirq()
	return r, errors.Join(err1, err2, err3)
}

var sessionCounter atomic.Uint64

// measure runs the case's workload once for the given duration and
// returns the sample's values.
func (p *pair) measure(ctx context.Context, c model.Case, duration time.Duration) (model.Sample, error) {

	spec := engine.RunSpec{
		Workload:     c.Workload,
		Target:       p.target,
		Session:      sessionCounter.Add(1),
		Flows:        c.Params.Flows,
		MsgSize:      c.Params.MsgSize,
		RequestSize:  c.Params.RequestSize,
		ResponseSize: c.Params.ResponseSize,
		DurationMS:   duration.Milliseconds(),
		NoDelay:      c.Workload == "tcp_rr",
	}
	before, err := p.readCPU()
	if err != nil {
		return model.Sample{}, err
	}
	run, err := p.client.client.Run(ctx, spec)
	if err != nil {
		return model.Sample{}, p.client.describe(fmt.Errorf("run %s against %s: %w", c.Workload, p.target, err))
	}
	sess, err := p.server.client.Collect(ctx, spec.Session, 10*time.Second)
	if err != nil {
		return model.Sample{}, p.server.describe(fmt.Errorf("collect session %d: %w", spec.Session, err))
	}
	after, err := p.readCPU()
	if err != nil {
		return model.Sample{}, err
	}
	return sampleFrom(c, before, after, run, sess)
}

// sampleFrom turns the two engines' accounts and the CPU readings into a
// sample. The sender of a stream is the client and the receiver the
// server; for request/response the client sends the requests.
func sampleFrom(c model.Case, before, after cpuReading, run *engine.RunResult, sess *engine.SessionResult) (model.Sample, error) {
	wall := after.at.Sub(before.at)
	if wall <= 0 {
		return model.Sample{}, errors.New("measure: the clock did not advance")
	}
	clientCPU := after.client.Sub(before.client).Total()
	serverCPU := after.server.Sub(before.server).Total()
	bothCPU := (clientCPU + serverCPU).Seconds()
	v := map[string]float64{
		model.CPUSenderPct:   100 * clientCPU.Seconds() / wall.Seconds(),
		model.CPUReceiverPct: 100 * serverCPU.Seconds() / wall.Seconds(),
		model.CPUSoftirqPct:  100 * (after.softirq - before.softirq).Seconds() / wall.Seconds(),
	}
	if run.RetransmitsKnown {
		v[model.Retransmits] = float64(run.Retransmits)
	}
	s := model.Sample{Started: before.at, Duration: wall, Values: v}
	switch c.Workload {
	case "tcp_stream":
		if sess.Elapsed <= 0 || sess.ReceivedBytes <= 0 {
			return s, fmt.Errorf("measure: the receiver got %d bytes in %v", sess.ReceivedBytes, sess.Elapsed)
		}
		v[model.ThroughputBPS] = float64(sess.ReceivedBytes) * 8 / sess.Elapsed.Seconds()
		v[model.SentBytes] = float64(run.SentBytes)
		v[model.ReceivedBytes] = float64(sess.ReceivedBytes)
		v[model.CPUSPerGB] = bothCPU / (float64(sess.ReceivedBytes) / 1e9)
		s.Intervals = sess.Intervals
	case "tcp_rr":
		if run.Transactions <= 0 || run.Elapsed <= 0 {
			return s, fmt.Errorf("measure: %d transactions in %v", run.Transactions, run.Elapsed)
		}
		v[model.TransactionsPerS] = float64(run.Transactions) / run.Elapsed.Seconds()
		v[model.CPUUSPerTx] = bothCPU * 1e6 / float64(run.Transactions)
		h, err := hdrhistogram.Decode(run.LatencyHDR)
		if err != nil {
			return s, fmt.Errorf("measure: decode latency histogram: %w", err)
		}
		for _, p := range model.LatencyPercentiles {
			v[p.Name] = float64(h.ValueAtQuantile(p.Quantile)) / 1e3
		}
		v[model.LatencyMeanUS] = h.Mean() / 1e3
		s.Latency = run.LatencyHDR
	default:
		return s, fmt.Errorf("measure: workload %q has no measurement", c.Workload)
	}
	return s, nil
}
