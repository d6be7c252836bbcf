package site

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"cnbench/internal/agent"
	"cnbench/internal/agent/protocol"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/pinning"
	"cnbench/internal/topo"
)

// AgentTimeout is how long an agent keeps a case's objects once the run
// falls silent; a run that dies loses its connection, and the agent
// removes them at once.
var AgentTimeout = 10 * time.Second

// Agents places cases on the machines a scenario's hosts map to agents,
// with one client per agent for the whole run.
type Agents struct {
	hosts   map[string]AgentHost
	mu      sync.Mutex
	clients map[string]*agent.Client
}

var _ Placer = (*Agents)(nil)

// AgentHost is a host of a topology on the machine of an agent.
type AgentHost struct {
	// Name is the topology's name of the host, h1 or h2.
	Name string
	// Addr is the agent's "host:port".
	Addr        string
	Credentials agent.Credentials
}

// NewAgents places hosts on agents; nil when there are none.
func NewAgents(hosts []AgentHost) *Agents {
	if len(hosts) == 0 {
		return nil
	}
	a := &Agents{hosts: map[string]AgentHost{}, clients: map[string]*agent.Client{}}
	for _, h := range hosts {
		a.hosts[h.Name] = h
	}
	return a
}

// Spans reports whether a case of the topology runs on agents: every
// topology that spans hosts does once the scenario maps hosts; chc, with
// its one host, stays on this machine.
func (a *Agents) Spans(topology string) bool {
	return a != nil && topology != topo.CHC
}

// Shared is false: agents build each case's path for that case alone.
func (a *Agents) Shared() bool { return false }

func (a *Agents) client(name string) (*agent.Client, error) {
	h, ok := a.hosts[name]
	if !ok {
		return nil, fmt.Errorf("hosts: %s is not mapped to an agent; a topology across agents needs every one of its hosts mapped", name)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.clients[name]; ok {
		return c, nil
	}
	c, err := agent.NewClient(h.Addr, h.Credentials)
	if err != nil {
		return nil, fmt.Errorf("hosts.%s: %w", name, err)
	}
	a.clients[name] = c
	return c, nil
}

// Close lets go of the agents' connections.
func (a *Agents) Close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.clients {
		c.CloseIdle()
	}
}

// Place builds a chhc case across the agents of h1 and h2: each builds
// its host on its machine's NIC and places one endpoint, the server on h1
// and the client on h2, as the emulated chhc does. Only the native engine
// runs there: the agents start no other program.
func (a *Agents) Place(ctx context.Context, c *model.Case, plan Plan, _ []int) (pa *Path, err error) {
	if c.Topology != topo.CHHC {
		return nil, fmt.Errorf("%w: %s across agents: only %s spans machines (routed needs a router machine)", mode.ErrUnsupported, c.Topology, topo.CHHC)
	}
	if err := remoteCase(c, "agents"); err != nil {
		return nil, err
	}
	if servers, clients := c.Params.Endpoints(); servers != 1 || clients != 1 {
		return nil, fmt.Errorf("%w: %d endpoints across agents (servers: %d, clients: %d): each agent's host holds one endpoint, the server on h1 and the client on h2",
			mode.ErrUnsupported, servers+clients, servers, clients)
	}
	var sessions []*agent.Session
	closeAll := func() error {
		var errs []error
		for _, s := range sessions {
			errs = append(errs, s.Close())
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, closeAll())
		}
	}()
	var sites []*Remote
	for i, role := range []string{"s1", "c1"} {
		s, err := a.openHost(ctx, c, plan.Opts, i+1)
		if err != nil {
			return nil, err
		}
		sessions = append(sessions, s)
		r, err := placeRemote(ctx, s, protocol.EndpointRequest{Mode: c.Mode, Name: role})
		if err != nil {
			return nil, err
		}
		sites = append(sites, r)
	}
	return remotePath(ctx, sites[:1], sites[1:], closeAll), nil
}

// openHost opens a session on host h<index>'s agent and builds the host
// there.
func (a *Agents) openHost(ctx context.Context, c *model.Case, opts topo.Options, index int) (*agent.Session, error) {
	client, err := a.client(fmt.Sprintf("h%d", index))
	if err != nil {
		return nil, err
	}
	s, err := client.Open(ctx, AgentTimeout)
	if err != nil {
		return nil, err
	}
	req := protocol.HostRequest{Topology: c.Topology, Index: index, Hosts: 2, MTU: opts.MTU, NICRateBPS: opts.NICRateBPS,
		GRO: opts.Offloads.GRO, GSO: opts.Offloads.GSO, TSO: opts.Offloads.TSO, TxChecksum: opts.Offloads.TxChecksum}
	if _, err := s.Host(ctx, req); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// remoteCase refuses what cannot run on endpoints of other machines.
func remoteCase(c *model.Case, where string) error {
	if c.Params.Placement != "" && c.Params.Placement != pinning.None {
		return fmt.Errorf("%w: placement %s through %s: CPUs are their machines', not this one's", mode.ErrUnsupported, c.Params.Placement, where)
	}
	if f := model.FamilyKey(c.Params.Family); f != "" {
		return fmt.Errorf("%w: family %s through %s: they number IPv4 only", mode.ErrUnsupported, f, where)
	}
	return nil
}

// remotePath is the path of remote servers and clients, client i talking
// to server i mod len(servers), as a pattern's emulated endpoints do.
func remotePath(ctx context.Context, servers, clients []*Remote, closeAll func() error) *Path {
	pa := &Path{
		ServerOf:   serversOf(len(clients), len(servers)),
		ServerNode: servers[0].Host(), ClientNode: clients[0].Host(),
		expose: func(s Site, port int) (netip.AddrPort, error) { return s.(*Remote).Expose(ctx, port) },
		close:  closeAll,
	}
	for _, s := range servers {
		pa.Servers = append(pa.Servers, s)
	}
	for _, c := range clients {
		pa.Clients = append(pa.Clients, c)
	}
	return pa
}
