package site

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"sync"

	"cnbench/internal/cpu"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// Emulated places cases on this machine: emulated hosts in namespaces,
// VM guests among them, each endpoint with a cgroup of its own.
type Emulated struct {
	Token netns.Token
	Hier  cpu.Hierarchy
	// Env is the environment of the processes started in the sites.
	Env []string
}

var _ Placer = (*Emulated)(nil)

func (e *Emulated) Shared() bool { return true }

// Place builds the case's topology on this machine's emulated hosts and
// places the endpoints on it.
func (e *Emulated) Place(_ context.Context, c *model.Case, plan Plan, ports []int) (*Path, error) {
	t, err := topo.Build(c.Topology, e.Token, plan.Opts)
	if err != nil {
		return nil, err
	}
	m := plan.Mode.New(t)
	p, published := m.(mode.Publisher)
	if published {
		p.Publish(ports...)
	}
	pa, err := e.placeGroup(t, m, c.Params)
	if err != nil {
		return nil, errors.Join(err, t.Close())
	}
	pa.Published = published
	pa.expose = func(s Site, port int) (netip.AddrPort, error) { return m.Expose(s.Endpoint(), port) }
	pa.close = func() error { return errors.Join(closeSites(pa.Servers, pa.Clients), t.Close()) }
	if err := t.ApplyOffloads(); err != nil {
		return nil, errors.Join(err, pa.Close())
	}
	return pa, nil
}

// Shape is how many servers and clients a case's pattern places: pairs
// (the default) C of each, fan_in and containers_x_flows one server, and
// n_to_m N servers for M clients.
func Shape(p model.Params) (servers, clients int) {
	clients = max(1, p.Clients)
	switch p.Pattern {
	case model.PatternFanIn, model.PatternContainersXFlows:
		return 1, clients
	case model.PatternNToM:
		return max(1, p.Servers), clients
	}
	return clients, clients
}

// placeGroup places the endpoints a case's pattern asks for, each in a
// cgroup of its own: servers s1..sN on the server host, clients c1..cM on
// the client host, client i talking to server i mod N. Endpoints are
// built in parallel: a fan-in of dozens of endpoints should not spend its
// time on one netlink call after another.
func (e *Emulated) placeGroup(t *topo.Topology, m mode.Mode, p model.Params) (pa *Path, err error) {
	nServers, nClients := Shape(p)
	pa = &Path{ServerOf: make([]int, nClients)}
	for i := range pa.ServerOf {
		pa.ServerOf[i] = i % nServers
	}
	names := make([]string, 0, nServers+nClients)
	for i := range nServers {
		names = append(names, "s"+strconv.Itoa(i+1))
	}
	for i := range nClients {
		names = append(names, "c"+strconv.Itoa(i+1))
	}
	sites := make([]Site, len(names))
	errs := make([]error, len(names))
	defer func() {
		if err != nil {
			err = errors.Join(err, closeSites(sites))
		}
	}()
	// Modes keep per-host state (a bridge, an address counter), so the
	// endpoints of one host are made one at a time; the cgroups, which
	// cost as much, are made alongside.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, name := range names {
		ep, err := m.Endpoint(t.HostFor(i < nServers), name)
		if err != nil {
			wg.Wait()
			return nil, err
		}
		wg.Go(func() {
			s, err := e.siteOf(ep, name)
			mu.Lock()
			sites[i], errs[i] = s, err
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	pa.Servers, pa.Clients = sites[:nServers], sites[nServers:]
	return pa, nil
}

// siteOf makes an endpoint a site: in a VM guest where its host is one,
// else in a namespace here.
func (e *Emulated) siteOf(ep *topo.Endpoint, name string) (Site, error) {
	if ep.Host != nil && ep.Host.Guest != nil {
		return NewGuest(ep), nil
	}
	s, err := NewLocal(ep, e.Hier, e.Token.Name(name), e.Env)
	if err != nil {
		return nil, err
	}
	return s, nil
}
