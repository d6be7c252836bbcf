package kernel

import (
	"errors"
	"fmt"
	"net/netip"

	"cnbench/internal/mode"
	"cnbench/internal/topo"
	"cnbench/internal/vm"
)

// familyRows marks rows as the kernel family's and makes the modes that
// guests build guest-aware: in a VM topology, endpoints on VM hosts are
// built inside the guest by its agent, with this package's own code on
// the guest's kernel, and those on emulated hosts here, as always.
func familyRows(rows []mode.Descriptor) []mode.Descriptor {
	for i := range rows {
		rows[i].Family = mode.Kernel
		if d := rows[i]; d.Guests.Build {
			rows[i].New = func(t *topo.Topology) mode.Mode {
				m := d.New(t)
				if !topo.IsVM(t.Kind) {
					return m
				}
				return &guestAware{local: m, name: d.Name}
			}
		}
	}
	return rows
}

type guestAware struct {
	local mode.Mode
	name  string
}

var _ mode.Mode = (*guestAware)(nil)

// Endpoint asks the guest's agent for the endpoint on a VM host.
func (g *guestAware) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	if h.Guest == nil {
		return g.local.Endpoint(h, name)
	}
	addr, err := h.Guest.Endpoint(g.name, name)
	if errors.Is(err, vm.ErrGuestUnsupported) {
		return nil, fmt.Errorf("%w: %v", mode.ErrUnsupported, err)
	}
	if err != nil {
		return nil, err
	}
	// NS is the namespace qemu runs in: nothing of the endpoint is there,
	// but messages name it.
	return &topo.Endpoint{Name: name, Host: h, NS: h.NS, Addr: addr}, nil
}

func (g *guestAware) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	if ep.Host.Guest != nil {
		return Direct(ep, port)
	}
	return g.local.Expose(ep, port)
}
