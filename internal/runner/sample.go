package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/cpu"
	"cnbench/internal/model"
	"cnbench/internal/netstat"
)

// cpuReading is the CPU time of both sides and of the machine at one
// moment.
type cpuReading struct {
	at             time.Time
	server, client cpu.Usage
	machine        cpu.Machine
	// wire is the server namespace's interface counters.
	wire netstat.Counters
	// udp is the server namespaces' UDP counters.
	udp netstat.UDP
}

func readCPU(server, client *slot) (cpuReading, error) {
	if server.agent != nil {
		return readAgentCPU(server, client)
	}
	if server.group != nil {
		return readGroupCPU(server.group)
	}
	r := cpuReading{at: time.Now()}
	var err1, err2, err3, err4 error
	r.server, err1 = server.usage()
	r.client, err2 = client.usage()
	r.machine, err3 = cpu.ReadMachine()
	r.wire, err4 = server.counters()
	return r, errors.Join(err1, err2, err3, err4)
}

// measure runs one exchange between CPU readings and turns it into a
// sample.
func measure(ctx context.Context, d driver, server, client *slot, c model.Case, dur time.Duration) (model.Sample, error) {
	before, err := readCPU(server, client)
	if err != nil {
		return model.Sample{}, err
	}
	var watch *stealWatch
	if server.agent == nil {
		watch = watchSteal() // this machine's: an agent's steal is its own
	}
	x, err := d.exchange(ctx, c, dur)
	marks := watch.end()
	if err != nil {
		return model.Sample{}, err
	}
	after, err := readCPU(server, client)
	if err != nil {
		return model.Sample{}, err
	}
	return sampleFrom(c, before, after, x, marks)
}

// sampleFrom turns an exchange and the CPU readings around it into a
// sample. The sender of a stream is the client and the receiver the
// server; for request/response the client sends the requests.
func sampleFrom(c model.Case, before, after cpuReading, x exchange, marks []stealMark) (model.Sample, error) {
	wall := after.at.Sub(before.at)
	if wall <= 0 {
		return model.Sample{}, errors.New("measure: the clock did not advance")
	}
	clientCPU := after.client.Sub(before.client).Total()
	serverCPU := after.server.Sub(before.server).Total()
	bothCPU := (clientCPU + serverCPU).Seconds()
	busyTime := x.busyTime(wall)
	busy := busyTime.Seconds()
	v := map[string]float64{
		model.CPUSenderPct:   100 * clientCPU.Seconds() / busy,
		model.CPUReceiverPct: 100 * serverCPU.Seconds() / busy,
	}
	machine := after.machine.Sub(before.machine)
	v[model.CPUSoftirqPct] = 100 * machine.Softirq.Seconds() / busy
	// Steal is the hypervisor's, not the engine's doing: a rate over the
	// time traffic flowed, where marks tell when that began (stealWatch).
	v[model.CPUStealPct] = stealPct(before, after, busyTime, marks)
	if x.retransmitsKnown {
		v[model.Retransmits] = float64(x.retransmits)
	}
	s := model.Sample{Started: before.at, Duration: wall, Values: v, Intervals: x.intervals}
	switch c.Workload {
	case "tcp_stream":
		if x.receiveTime <= 0 || x.receivedBytes <= 0 {
			return s, fmt.Errorf("measure: the receiver got %d bytes in %v", x.receivedBytes, x.receiveTime)
		}
		v[model.ThroughputBPS] = float64(x.receivedBytes) * 8 / x.receiveTime.Seconds()
		if x.sentBytes > 0 {
			v[model.SentBytes] = float64(x.sentBytes)
		}
		v[model.ReceivedBytes] = float64(x.receivedBytes)
		v[model.CPUSPerGB] = bothCPU / (float64(x.receivedBytes) / 1e9)
		wire := after.wire.Sub(before.wire)
		v[model.WireRxBytes] = float64(wire.RxBytes)
		v[model.WireRxPackets] = float64(wire.RxPackets)
		if payload := wirePayload(wire); payload > 0 {
			v[model.AppWireRatio] = float64(x.receivedBytes) / payload
		}
	case "tcp_rr":
		if x.transactions <= 0 || x.txTime <= 0 {
			return s, fmt.Errorf("measure: %d transactions in %v", x.transactions, x.txTime)
		}
		v[model.TransactionsPerS] = float64(x.transactions) / x.txTime.Seconds()
		v[model.CPUUSPerTx] = bothCPU * 1e6 / float64(x.transactionsForCPU())
		if err := latencyValues(v, x); err != nil {
			return s, err
		}
		s.Latency = x.latencyHDR
	default:
		if err := moreValues(c, &s, x, before, after, bothCPU); err != nil {
			return s, err
		}
	}
	patternValues(v, x)
	return s, nil
}

// latencyValues fills the sample's latency metrics from the exchange's
// histogram, or from the percentiles the engine reported itself.
func latencyValues(v map[string]float64, x exchange) error {
	if len(x.latencyHDR) == 0 {
		for k, us := range x.latencyUS {
			v[k] = us
		}
		return nil
	}
	h, err := hdrhistogram.Decode(x.latencyHDR)
	if err != nil {
		return fmt.Errorf("measure: decode latency histogram: %w", err)
	}
	for _, p := range model.LatencyPercentiles {
		v[p.Name] = float64(h.ValueAtQuantile(p.Quantile)) / 1e3
	}
	v[model.LatencyMeanUS] = h.Mean() / 1e3
	return nil
}

// tcpFrameOverhead is the Ethernet, IPv4 and TCP (with timestamps) header
// bytes that every frame the counters count carries. With GSO and GRO a
// counted frame may hold up to 64 KiB of payload under one header.
const tcpFrameOverhead = 14 + 20 + 32

// wirePayload estimates the TCP payload the server's interfaces received:
// their byte count less one header per counted frame.
func wirePayload(w netstat.Counters) float64 {
	return float64(w.RxBytes) - float64(w.RxPackets)*tcpFrameOverhead
}
