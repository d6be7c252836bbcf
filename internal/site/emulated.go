package site

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"cnbench/internal/cleanup"
	"cnbench/internal/cpu"
	"cnbench/internal/daemon"
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

	// Paths that exist at once (the modes of paired cases) each need
	// names of their own: the first takes Token, every further one a
	// token of its own, claimed for this process like the run's and kept
	// for later paths until Close.
	mu    sync.Mutex
	extra []netns.Token
	busy  map[netns.Token]bool
}

var _ Placer = (*Emulated)(nil)

func (e *Emulated) Shared() bool { return true }

// Place builds the case's topology on this machine's emulated hosts and
// places the endpoints on it.
func (e *Emulated) Place(_ context.Context, c *model.Case, plan Plan, ports []int) (*Path, error) {
	tok, err := e.take()
	if err != nil {
		return nil, err
	}
	// Tokens are used again: deaths of an earlier path's daemons that no
	// case took up are not this path's.
	daemon.Deaths(tok)
	t, err := topo.Build(c.Topology, tok, plan.Opts)
	if err != nil {
		e.give(tok)
		return nil, namingDeaths(tok, err)
	}
	m := plan.Mode.New(t)
	p, published := m.(mode.Publisher)
	if published {
		p.Publish(ports...)
	}
	pa, err := e.placeGroup(t, tok, m, c.Params)
	if err != nil {
		err = errors.Join(err, t.Close())
		e.give(tok)
		return nil, namingDeaths(tok, err)
	}
	pa.Published, pa.Token = published, tok
	pa.expose = func(s Site, port int) (netip.AddrPort, error) { return m.Expose(s.Endpoint(), port) }
	pa.close = func() error {
		err := errors.Join(closeSites(pa.Servers, pa.Clients), t.Close())
		e.give(tok)
		return err
	}
	if err := t.ApplyOffloads(); err != nil {
		return nil, namingDeaths(tok, errors.Join(err, pa.Close()))
	}
	return pa, nil
}

// namingDeaths adds to a failure to build a path the daemons and guests
// of its network that died meanwhile: a dockerd killed while its image
// was imported shows only as "Cannot connect to the Docker daemon".
func namingDeaths(tok netns.Token, err error) error {
	return WithDeaths(err, daemon.Deaths(tok))
}

// WithDeaths adds to err the deaths it does not name yet.
func WithDeaths(err error, died []string) error {
	var add []string
	for _, d := range died {
		if !strings.Contains(err.Error(), d) {
			add = append(add, d)
		}
	}
	if len(add) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(add, "; "))
}

// placeGroup places the endpoints a case's pattern asks for, each in a
// cgroup of its own: servers s1..sN and clients c1..cM on the hosts the
// topology puts them on (Topology.ServerHost, ClientHost), client i
// talking to server i mod N. Endpoints are
// built in parallel: a fan-in of dozens of endpoints should not spend its
// time on one netlink call after another.
func (e *Emulated) placeGroup(t *topo.Topology, tok netns.Token, m mode.Mode, p model.Params) (pa *Path, err error) {
	nServers, nClients := p.Endpoints()
	pa = &Path{ServerOf: serversOf(nClients, nServers)}
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
		h := t.ServerHost(i, p.Pattern)
		if i >= nServers {
			h = t.ClientHost(i-nServers, nServers, p.Pattern)
		}
		ep, err := m.Endpoint(h, name)
		if err == nil && ep.Addr.Is6() != t.Family().Has6() {
			// A mode that numbered outside the case's family would
			// measure the other IP version under this one's name.
			err = fmt.Errorf("the mode placed %s at %s in a topology of family %s", name, ep.Addr, t.Family())
		}
		if err != nil {
			wg.Wait()
			return nil, err
		}
		wg.Go(func() {
			s, err := e.siteOf(ep, tok.Name(name))
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
	if a, ok := m.(mode.Acquainter); ok {
		for i, c := range pa.Clients {
			if err := a.Acquaint(c.Endpoint(), pa.Servers[pa.ServerOf[i]].Endpoint()); err != nil {
				return nil, err
			}
		}
	}
	if err := t.AwaitIPv6(); err != nil {
		return nil, err
	}
	return pa, nil
}

// siteOf makes an endpoint a site: in a VM guest where its host is one,
// else in a namespace here, with the cgroup cgName.
func (e *Emulated) siteOf(ep *topo.Endpoint, cgName string) (Site, error) {
	if ep.Host != nil && ep.Host.Guest != nil {
		return NewGuest(ep), nil
	}
	s, err := NewLocal(ep, e.Hier, cgName, e.Env)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// take returns a token no path in place uses: the run's, or another this
// process owns.
func (e *Emulated) take() (netns.Token, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.busy == nil {
		e.busy = map[netns.Token]bool{}
	}
	for _, tok := range append([]netns.Token{e.Token}, e.extra...) {
		if !e.busy[tok] {
			e.busy[tok] = true
			return tok, nil
		}
	}
	tok := netns.NewToken()
	if err := cleanup.Claim(tok); err != nil {
		return "", err
	}
	e.extra = append(e.extra, tok)
	e.busy[tok] = true
	return tok, nil
}

// give returns a token once its path is gone.
func (e *Emulated) give(tok netns.Token) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.busy, tok)
}

// Close releases the tokens taken beyond the run's, with the guest images
// made under them.
func (e *Emulated) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for _, tok := range e.extra {
		errs = append(errs, topo.RemoveImages(tok), cleanup.Release(tok))
	}
	e.extra = nil
	return errors.Join(errs...)
}
