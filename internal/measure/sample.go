package measure

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/cpu"
	"cnbench/internal/model"
	"cnbench/internal/netstat"
	"cnbench/internal/site"
)

// reading is the CPU time of both sides of a path and of the machines
// they run on at one moment, and the kernel's counters of the servers'
// namespaces.
type reading struct {
	at             time.Time
	server, client cpu.Usage
	machine        cpu.Machine
	// remote is set when the sites run on other machines, whose machine
	// time this is.
	remote bool
	// local is set when every site is a namespace on this machine, whose
	// processes this machine's /proc/stat counts.
	local bool
	// whole is set when machine holds the whole CPU time of every
	// machine the sites run on: this one's when all are local, or the
	// agents' machines' (a cluster's nodes) when none is.
	whole bool
	wire  netstat.Counters
	udp   netstat.UDP
	// shared is set when a client runs in a server's namespace, whose
	// UDP counters then count the responses as well as the requests.
	shared bool
}

// read reads every site of a path: the sender's CPU time is the sum over
// the clients, the receiver's over the servers. Endpoints of the host
// mode share their host's namespace, whose counters count once; each
// machine's softirq and steal time count once too, this machine's and
// those of the VM guests it runs beside one another.
func read(p *site.Path) (reading, error) {
	r := reading{at: time.Now(), local: true, whole: true}
	var errs []error
	seen := map[string]bool{}
	machines := map[string]cpu.Machine{}
	guests := map[string]bool{}
	here := false
	add := func(sites []site.Site, traffic bool) cpu.Usage {
		var total cpu.Usage
		for _, s := range sites {
			rd, err := s.Read(traffic)
			errs = append(errs, err)
			if _, ok := s.(*site.Local); !ok {
				r.local = false
			}
			total = total.Add(rd.CPU)
			if traffic && !seen[rd.Namespace] {
				seen[rd.Namespace] = true
				r.wire, r.udp = r.wire.Add(rd.Links), r.udp.Add(rd.UDP)
			}
			r.shared = r.shared || (!traffic && seen[rd.Namespace])
			if rd.Machine == nil || rd.Guest {
				here = true
			}
			if rd.Machine != nil {
				r.whole = r.whole && !rd.Guest && rd.Machine.Busy > 0
				key := cmp.Or(rd.Kernel, strings.ToLower(rd.Host))
				machines[key] = *rd.Machine
				guests[key] = rd.Guest
			}
		}
		return total
	}
	r.server, r.client = add(p.Servers, true), add(p.Clients, false)
	if here {
		var err error
		r.machine, err = cpu.ReadMachine()
		errs = append(errs, err)
	}
	for h, m := range machines {
		r.machine = r.machine.Add(m)
		r.remote = r.remote || !guests[h]
	}
	r.whole = r.whole && !(here && r.remote)
	return r, errors.Join(errs...)
}

// Take runs one exchange between readings of the path and turns it into
// a sample; with a profiler, the sample has the profile of the machine
// over the same readings.
func Take(ctx context.Context, d Exchanger, p *site.Path, c model.Case, dur time.Duration, prof Profiler) (model.Sample, error) {
	if pr, ok := d.(Preparer); ok {
		if err := pr.Prepare(ctx, c, dur); err != nil {
			return model.Sample{}, err
		}
	}
	rec, failed := startProfile(ctx, prof)
	if rec != nil {
		defer rec.Close()
	}
	before, err := read(p)
	if err != nil {
		return model.Sample{}, err
	}
	var watch *stealWatch
	if !before.remote {
		watch = watchSteal() // this machine's: an agent's steal is its own
	}
	gather, err := traffic(ctx, d, c, dur)
	marks := watch.end()
	if err != nil {
		return model.Sample{}, err
	}
	after, err := read(p)
	if rec != nil {
		if stopErr := rec.Stop(); stopErr != nil {
			failed = &model.Profile{Note: stopErr.Error()}
		}
	}
	if err != nil {
		return model.Sample{}, err
	}
	x, err := gather(ctx)
	if err != nil {
		return model.Sample{}, err
	}
	s, err := sampleFrom(c, before, after, x, marks)
	s.Profile = finishProfile(rec, failed, c, before, after, x)
	return s, err
}

// traffic runs d's traffic: the whole exchange, unless d gathers its
// results after the traffic has ended.
func traffic(ctx context.Context, d Exchanger, c model.Case, dur time.Duration) (func(context.Context) (Exchange, error), error) {
	if g, ok := d.(Gatherer); ok {
		return g.Traffic(ctx, c, dur)
	}
	x, err := d.Exchange(ctx, c, dur)
	return func(context.Context) (Exchange, error) { return x, nil }, err
}

// sampleFrom turns an exchange and the CPU readings around it into a
// sample. The sender of a stream is the client and the receiver the
// server; for request/response the client sends the requests.
func sampleFrom(c model.Case, before, after reading, x Exchange, marks []stealMark) (model.Sample, error) {
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
	switch {
	case before.local && after.local:
		machineValues(v, machine, clientCPU+serverCPU, busy)
	case before.whole && after.whole:
		// Other machines' softirq apart from the endpoints depends on
		// their kernels' accounting, which is not known here.
		v[model.CPUMachinePct] = 100 * machine.Busy.Seconds() / busy
	}
	// Steal is the hypervisor's, not the engine's doing: a rate over the
	// time traffic flowed, where marks tell when that began (stealWatch).
	v[model.CPUStealPct] = stealPct(before, after, busyTime, marks)
	if x.RetransmitsKnown {
		v[model.Retransmits] = float64(x.Retransmits)
	}
	if x.RetransmittedBytesKnown {
		v[model.RetransmittedBytes] = float64(x.RetransmittedBytes)
	}
	s := model.Sample{Started: before.at, Duration: wall, Values: v, Intervals: x.Intervals}
	if err := shapeValues(c, &s, x, before, after, bothCPU); err != nil {
		return s, err
	}
	patternValues(v, x)
	flowValues(v, x)
	return s, nil
}

// machineValues splits the machine's busy time over the sample into the
// endpoints' (both, already in v), the softirq time no endpoint was
// charged, and the rest, all over the same readings and the same busy
// time.
func machineValues(v map[string]float64, machine cpu.Machine, both time.Duration, busy float64) {
	apart := machine.SoftirqApart()
	v[model.CPUMachinePct] = 100 * machine.Busy.Seconds() / busy
	v[model.CPUSoftirqApartPct] = 100 * apart.Seconds() / busy
	v[model.CPUOtherPct] = 100 * (machine.Busy - both - apart).Seconds() / busy
}

// latencyValues fills the sample's latency metrics from the exchange's
// histogram, or from the percentiles the engine reported itself.
func latencyValues(v map[string]float64, x Exchange) error {
	if len(x.LatencyHDR) == 0 {
		for k, us := range x.LatencyUS {
			v[k] = us
		}
		return nil
	}
	h, err := hdrhistogram.Decode(x.LatencyHDR)
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
// bytes that every frame the counters count carries; over IPv6 the IP
// header is 40 bytes, not 20. With GSO and GRO a counted frame may hold
// up to 64 KiB of payload under one header.
const (
	tcpFrameOverhead  = 14 + 20 + 32
	tcpFrameOverhead6 = 14 + 40 + 32
)

// wirePayload estimates the TCP payload the server's interfaces received:
// their byte count less one header per counted frame.
func wirePayload(w netstat.Counters, v6 bool) float64 {
	overhead := tcpFrameOverhead
	if v6 {
		overhead = tcpFrameOverhead6
	}
	return float64(w.RxBytes) - float64(w.RxPackets)*float64(overhead)
}
