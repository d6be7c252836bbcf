package runner

import (
	"errors"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"cnbench/internal/cpu"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/netstat"
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
		r.wire = r.wire.Add(w)
		u, err := netstat.ReadUDP(s.ep.NS)
		errs = append(errs, err)
		r.udp = r.udp.Add(u)
	}
	return r, errors.Join(errs...)
}
