package runner

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"cnbench/internal/agent"
	"cnbench/internal/cpu"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/netstat"
	"cnbench/internal/placement"
	"cnbench/internal/scenario"
	"cnbench/internal/topo"
)

// AgentTimeout is how long an agent keeps a case's objects once the run
// falls silent; a run that dies loses its connection, and the agent
// removes them at once.
var AgentTimeout = 10 * time.Second

// agentHosts are the hosts a scenario maps to agents, with one client per
// agent for the whole run.
type agentHosts struct {
	hosts   map[string]scenario.Host
	mu      sync.Mutex
	clients map[string]*agent.Client
}

// useHosts takes the scenario's hosts section for the cases to come.
func (r *Runner) useHosts(hosts []scenario.Host) {
	if len(hosts) == 0 {
		r.agents = nil
		return
	}
	a := &agentHosts{hosts: map[string]scenario.Host{}, clients: map[string]*agent.Client{}}
	for _, h := range hosts {
		a.hosts[h.Name] = h
	}
	r.agents = a
}

// onAgents reports whether a case of the topology runs on agents: every
// topology that spans hosts does once the scenario maps hosts; chc, with
// its one host, stays on this machine.
func (r *Runner) onAgents(topology string) bool {
	return r.agents != nil && topology != topo.CHC
}

func (a *agentHosts) client(name string) (*agent.Client, scenario.Host, error) {
	h, ok := a.hosts[name]
	if !ok {
		return nil, h, fmt.Errorf("hosts: %s is not mapped to an agent; a topology across agents needs every one of its hosts mapped", name)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.clients[name]; ok {
		return c, h, nil
	}
	c, err := agent.NewClient(h.Agent, agent.Credentials{CA: h.CA, Cert: h.Cert, Key: h.Key})
	if err != nil {
		return nil, h, fmt.Errorf("hosts.%s: %w", name, err)
	}
	a.clients[name] = c
	return c, h, nil
}

func (a *agentHosts) close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.clients {
		c.CloseIdle()
	}
}

// agentSlot is a slot whose endpoint lives on an agent's machine.
type agentSlot struct {
	sess *agent.Session
	name string
}

// placeOnAgents builds a chhc case across the agents of h1 and h2: each
// builds its host on its machine's NIC and places one endpoint, the
// server on h1 and the client on h2, as the emulated chhc does. Only the
// native engine runs there: the agents start no other program.
func (r *Runner) placeOnAgents(ctx context.Context, c *model.Case, _ mode.Descriptor, opts topo.Options) (pl placed, err error) {
	if c.Topology != topo.CHHC {
		return placed{}, fmt.Errorf("%w: %s across agents: only %s spans machines (routed needs a router machine)", mode.ErrUnsupported, c.Topology, topo.CHHC)
	}
	if err := remoteCase(c, "agents"); err != nil {
		return placed{}, err
	}
	var sessions []*agent.Session
	defer func() {
		if err != nil {
			for _, s := range sessions {
				err = errors.Join(err, s.Close())
			}
		}
	}()
	var slots []*slot
	for i, role := range []string{"s1", "c1"} {
		name := fmt.Sprintf("h%d", i+1)
		client, _, err := r.agents.client(name)
		if err != nil {
			return placed{}, err
		}
		s, err := client.Open(ctx, AgentTimeout)
		if err != nil {
			return placed{}, err
		}
		sessions = append(sessions, s)
		req := agent.HostRequest{Topology: c.Topology, Index: i + 1, Hosts: 2, MTU: opts.MTU, NICRateBPS: opts.NICRateBPS,
			GRO: opts.Offloads.GRO, GSO: opts.Offloads.GSO, TSO: opts.Offloads.TSO, TxChecksum: opts.Offloads.TxChecksum}
		if _, err := s.Host(ctx, req); err != nil {
			return placed{}, err
		}
		sl, err := agentEndpoint(ctx, s, agent.EndpointRequest{Mode: c.Mode, Name: role})
		if err != nil {
			return placed{}, err
		}
		slots = append(slots, sl)
	}
	return r.remotePlaced(ctx, c, slots, sessions[0].Info.Hostname, sessions[1].Info.Hostname,
		func() error { return errors.Join(sessions[0].Close(), sessions[1].Close()) })
}

// remoteCase refuses what cannot run on endpoints of other machines.
func remoteCase(c *model.Case, where string) error {
	if c.Engine != "native" {
		return fmt.Errorf("%w: %s through %s: they run only cnbench's own engine", errEngineCannot, c.Engine, where)
	}
	if c.Params.Placement != "" && c.Params.Placement != placement.None {
		return fmt.Errorf("%w: placement %s through %s: CPUs are their machines', not this one's", mode.ErrUnsupported, c.Params.Placement, where)
	}
	return nil
}

// agentEndpoint places an endpoint through an open session and makes it
// a slot.
func agentEndpoint(ctx context.Context, s *agent.Session, req agent.EndpointRequest) (*slot, error) {
	ep, err := s.Endpoint(ctx, req.Mode, req.Name, req.Addr, req.Peers...)
	if err != nil {
		return nil, err
	}
	addr, err := netip.ParseAddr(ep.Addr)
	if err != nil {
		return nil, fmt.Errorf("endpoint %s: address %q: %w", req.Name, ep.Addr, err)
	}
	return &slot{ep: &topo.Endpoint{Name: req.Name, Addr: addr}, agent: &agentSlot{sess: s, name: req.Name}}, nil
}

// remotePlaced records where the server and client ran and makes the
// placement of slots[0] (server) and slots[1] (client).
func (r *Runner) remotePlaced(ctx context.Context, c *model.Case, slots []*slot, serverNode, clientNode string, closeAll func() error) (placed, error) {
	server, client := slots[0], slots[1]
	c.Params.ServerNode, c.Params.ClientNode = serverNode, clientNode
	if err := r.store.SetCaseParams(c.ID, c.Params); err != nil {
		return placed{}, &storeError{err}
	}
	return placed{
		server: server, client: client,
		expose: func(port int) (netip.AddrPort, error) { return server.agent.sess.Expose(ctx, server.agent.name, port) },
		close:  closeAll,
	}, nil
}

// startEngine starts the native engine in the slot's endpoint on its
// agent and attaches to its control lines.
func (a *agentSlot) startEngine() (*nativeEngine, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := a.sess.StartEngine(ctx, a.name)
	if err != nil {
		return nil, err
	}
	return &nativeEngine{client: e.Client, remote: e}, nil
}

// readAgentCPU is readCPU for slots on agents: one reading of each side's
// cgroup, counters and machine softirq and steal time. Two agents on one
// machine report its time once.
func readAgentCPU(server, client *slot) (cpuReading, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := cpuReading{at: time.Now()}
	su, err1 := server.agent.sess.Usage(ctx, server.agent.name)
	cu, err2 := client.agent.sess.Usage(ctx, client.agent.name)
	if err := errors.Join(err1, err2); err != nil {
		return r, err
	}
	r.server = cpu.Usage{User: time.Duration(su.UserNS), System: time.Duration(su.SystemNS)}
	r.client = cpu.Usage{User: time.Duration(cu.UserNS), System: time.Duration(cu.SystemNS)}
	r.machine = cpu.Machine{Softirq: time.Duration(su.SoftirqNS), Steal: time.Duration(su.StealNS)}
	if !strings.EqualFold(server.agent.sess.Info.Hostname, client.agent.sess.Info.Hostname) {
		r.machine.Softirq += time.Duration(cu.SoftirqNS)
		r.machine.Steal += time.Duration(cu.StealNS)
	}
	r.wire = netstat.Sum(su.Links, countsTraffic)
	return r, nil
}
