package site

import (
	"context"
	"errors"
	"net/netip"
	"slices"

	"cnbench/internal/daemon"
	"cnbench/internal/model"
	"cnbench/internal/netns"
)

// Path is what a case measures: every endpoint its pattern places, and
// how clients reach the servers.
type Path struct {
	Servers, Clients []Site
	// ServerOf is, for each client, the index of its server.
	ServerOf []int
	// Published is set where the mode published the engines' ports
	// (the ports Place was given) before any server existed; engines must
	// then listen on them.
	Published bool
	// ServerNode and ClientNode name the machines or cluster nodes the
	// first server and client run on; empty on this machine.
	ServerNode, ClientNode string
	// ModeConfig is what the path's network ran on, where the placer
	// learned it (a cluster's versions and plugins), as JSON; the case
	// records it as its mode_config.
	ModeConfig string
	// Token names what the path's network is made of, where cnbench
	// built it on this machine; empty elsewhere.
	Token  netns.Token
	expose func(s Site, port int) (netip.AddrPort, error)
	close  func() error
}

// serversOf gives each of clients its server of servers: client i talks
// to server i mod servers.
func serversOf(clients, servers int) []int {
	of := make([]int, clients)
	for i := range of {
		of[i] = i % servers
	}
	return of
}

// Server and Client are the path's first server and client.
func (p *Path) Server() Site { return p.Servers[0] }
func (p *Path) Client() Site { return p.Clients[0] }

// Multi reports whether the path is more than one pair.
func (p *Path) Multi() bool { return len(p.Servers) > 1 || len(p.Clients) > 1 }

// OnThisMachine reports whether every endpoint of the path is a namespace
// on this machine, so that their engines share one clock.
func (p *Path) OnThisMachine() bool {
	for _, s := range append(slices.Clip(p.Servers), p.Clients...) {
		if _, ok := s.(*Local); !ok {
			return false
		}
	}
	return true
}

// Deaths returns, and forgets, the daemons of the path's network that
// ended by themselves (see daemon.Deaths).
func (p *Path) Deaths() []string {
	if p.Token == "" {
		return nil
	}
	return daemon.Deaths(p.Token)
}

// Died is closed once a daemon of the path's network has ended by
// itself; nil (never closed) where cnbench did not build the network.
func (p *Path) Died() <-chan struct{} {
	if p.Token == "" {
		return nil
	}
	return daemon.Died(p.Token)
}

// Expose publishes port of server s as the mode does and returns the
// address clients dial.
func (p *Path) Expose(s Site, port int) (netip.AddrPort, error) { return p.expose(s, port) }

// Pin has the clients' engines (the senders) run on sender and the
// servers' (the receivers) on receiver.
func (p *Path) Pin(sender, receiver []int) {
	for _, s := range p.Servers {
		s.Pin(receiver)
	}
	for _, s := range p.Clients {
		s.Pin(sender)
	}
}

// Close removes everything placing made.
func (p *Path) Close() error { return p.close() }

// closeSites removes the sites' own objects.
func closeSites(sites ...[]Site) error {
	var errs []error
	for _, list := range sites {
		for _, s := range list {
			if s != nil {
				errs = append(errs, s.Close())
			}
		}
	}
	return errors.Join(errs...)
}

// Placer builds the path of a case somewhere: on this machine's emulated
// hosts, on agents' machines, or on a cluster.
type Placer interface {
	// Place builds the case's topology and places its endpoints. A mode
	// that publishes ports before servers exist publishes ports.
	Place(ctx context.Context, c *model.Case, plan Plan, ports []int) (*Path, error)
	// Shared reports whether the cases of one path, differing in their
	// engine only, can take turns on a path built once.
	Shared() bool
}
