package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"cnbench/internal/cpu"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/scenario"
	"cnbench/internal/topo"
)

// shape is how many servers and clients a case's pattern places: pairs
// (the default) C of each, fan_in and containers_x_flows one server, and
// n_to_m N servers for M clients.
func shape(p model.Params) (servers, clients int) {
	clients = max(1, p.Clients)
	switch p.Pattern {
	case scenario.PatternFanIn, scenario.PatternContainersXFlows:
		return 1, clients
	case scenario.PatternNToM:
		return max(1, p.Servers), clients
	}
	return clients, clients
}

// group is every endpoint of a case placed on this machine: the server
// and client slots, and the server each client talks to.
type group struct {
	servers, clients []*slot
	serverOf         []int
	mode             mode.Mode
}

// placeGroup places the endpoints a case's pattern asks for, each in a
// cgroup of its own: servers s1..sN on the server host, clients c1..cM on
// the client host. Endpoints are built in parallel: a fan-in of dozens of
// endpoints should not spend its time on one netlink call after another.
func (r *Runner) placeGroup(t *topo.Topology, m mode.Mode, p model.Params) (g *group, err error) {
	nServers, nClients := shape(p)
	g = &group{mode: m, serverOf: make([]int, nClients)}
	for i := range g.serverOf {
		g.serverOf[i] = i % nServers
	}
	// Modes keep per-host state (a bridge, an address counter), so the
	// endpoints of one host are made one at a time; the cgroups, which
	// cost as much, are made alongside.
	names := make([]string, 0, nServers+nClients)
	for i := range nServers {
		names = append(names, "s"+strconv.Itoa(i+1))
	}
	for i := range nClients {
		names = append(names, "c"+strconv.Itoa(i+1))
	}
	slots := make([]*slot, len(names))
	errs := make([]error, len(names))
	defer func() {
		if err != nil {
			for _, s := range slots {
				if s != nil {
					err = errors.Join(err, s.close())
				}
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, name := range names {
		ep, err := m.Endpoint(t.HostFor(i < nServers), name)
		if err != nil {
			wg.Wait()
			return nil, err
		}
		wg.Go(func() {
			s, err := newSlot(ep, r.hier, r.token.Name(name), r.opts.EngineEnv)
			mu.Lock()
			slots[i], errs[i] = s, err
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	g.servers, g.clients = slots[:nServers], slots[nServers:]
	for _, s := range slots {
		s.group = g
	}
	return g, nil
}

// close removes every slot's cgroup.
func (g *group) close() error {
	var errs []error
	for _, s := range append(append([]*slot{}, g.servers...), g.clients...) {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

// expose publishes a port of a server slot and returns what clients dial.
func (g *group) expose(s *slot, port int) (netip.AddrPort, error) {
	return g.mode.Expose(s.ep, port)
}

// multi reports whether the group is more than one pair.
func (g *group) multi() bool { return len(g.servers) > 1 || len(g.clients) > 1 }

// readGroupCPU reads the CPU time of every slot, the sender's being the
// sum over the client slots and the receiver's over the server slots, and
// the kernel's counters of every server namespace.
func readGroupCPU(g *group) (cpuReading, error) {
	r := cpuReading{at: time.Now()}
	var errs []error
	sum := func(slots []*slot) cpu.Usage {
		var total cpu.Usage
		for _, s := range slots {
			u, err := s.usage()
			errs = append(errs, err)
			total = cpu.Usage{User: total.User + u.User, System: total.System + u.System}
		}
		return total
	}
	r.server, r.client = sum(g.servers), sum(g.clients)
	var err error
	r.machine, err = cpu.ReadMachine()
	errs = append(errs, err)
	// Endpoints of the host mode share their host's namespace; its
	// counters count once.
	seen := map[*netns.NS]bool{}
	for _, s := range g.servers {
		if seen[s.ep.NS] {
			continue
		}
		seen[s.ep.NS] = true
		w, err := s.counters()
		errs = append(errs, err)
		r.wire = r.wire.add(w)
		u, err := readUDPCounters(s.ep.NS)
		errs = append(errs, err)
		r.udp = r.udp.add(u)
	}
	return r, errors.Join(errs...)
}

func (c linkCounters) add(d linkCounters) linkCounters {
	return linkCounters{c.rxBytes + d.rxBytes, c.rxPackets + d.rxPackets, c.rxDropped + d.rxDropped, c.txBytes + d.txBytes, c.txPackets + d.txPackets}
}

// udpCounters are the kernel's UDP counters of a namespace, an account of
// datagrams that owes nothing to the engine: those delivered to sockets,
// and those dropped for a full receive buffer or other errors.
type udpCounters struct {
	inDatagrams, inErrors, rcvbufErrors uint64
}

func (c udpCounters) add(d udpCounters) udpCounters {
	return udpCounters{c.inDatagrams + d.inDatagrams, c.inErrors + d.inErrors, c.rcvbufErrors + d.rcvbufErrors}
}

func (c udpCounters) sub(d udpCounters) udpCounters {
	return udpCounters{c.inDatagrams - d.inDatagrams, c.inErrors - d.inErrors, c.rcvbufErrors - d.rcvbufErrors}
}

// readUDPCounters reads the Udp line of /proc/net/snmp in a namespace.
//
// Equivalent to: ip netns exec NS nstat -az Udp*
func readUDPCounters(ns *netns.NS) (udpCounters, error) {
	var data []byte
	err := ns.Do(func() (err error) {
		// /proc/net follows the process's namespace; thread-self follows
		// this thread's, which Do has switched.
		data, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	})
	if err != nil {
		return udpCounters{}, fmt.Errorf("read udp counters in %s: %w", ns.Name, err)
	}
	return parseSNMPUDP(data)
}

// parseSNMPUDP reads the "Udp:" header and value lines of /proc/net/snmp.
func parseSNMPUDP(data []byte) (udpCounters, error) {
	var header []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if header == nil {
			header = f
			continue
		}
		var c udpCounters
		for i, name := range header {
			if i == 0 || i >= len(f) {
				continue
			}
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return udpCounters{}, fmt.Errorf("parse snmp Udp %s %q: %w", name, f[i], err)
			}
			switch name {
			case "InDatagrams":
				c.inDatagrams = v
			case "InErrors":
				c.inErrors = v
			case "RcvbufErrors":
				c.rcvbufErrors = v
			}
		}
		return c, nil
	}
	return udpCounters{}, errors.New("no Udp lines in snmp")
}
