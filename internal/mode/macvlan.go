package mode

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"

	"cnbench/internal/topo"
)

// Macvlan gives each endpoint a macvlan sub-interface of the host's NIC in
// bridge mode: endpoints on one host switch frames to each other inside
// the driver, and reach other hosts directly on the wire with their own MAC
// and an underlay address. No veth pair, no bridge.
const Macvlan = "macvlan"

type macvlanMode struct {
	t *topo.Topology
	n counter
}

var _ Mode = (*macvlanMode)(nil)

func newMacvlanMode(t *topo.Topology) Mode { return &macvlanMode{t: t, n: counter{}} }

func macvlanAvailable() error { return linkKindAvailable("macvlan") }

// Endpoint creates the macvlan on the host's NIC straight inside the
// endpoint's namespace.
//
// Equivalent to: ip -n HOST link add eth0 link nic0 netns EP type macvlan mode bridge
func (m *macvlanMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	n, err := m.n.next(h)
	if err != nil {
		return nil, err
	}
	nic, err := h.Handle.LinkByName(topo.NICName)
	if err != nil {
		return nil, fmt.Errorf("find %s in %q: %w", topo.NICName, h.NS.Name, err)
	}
	ep, err := newEndpointNS(m.t, name)
	if err != nil {
		return nil, err
	}
	mv := &netlink.Macvlan{
		LinkAttrs: netlink.LinkAttrs{
			Name:        endpointIfName,
			ParentIndex: nic.Attrs().Index,
			MTU:         m.t.MTU(),
			Namespace:   netlink.NsFd(int(ep.ns.Handle())),
		},
		Mode: netlink.MACVLAN_MODE_BRIDGE,
	}
	if err := h.Handle.LinkAdd(mv); err != nil {
		return nil, fmt.Errorf("create macvlan on %s in %q into %q: %w", topo.NICName, h.NS.Name, ep.ns.Name, err)
	}
	addr := topo.WireAddr(h.Index, n)
	if err := configureEndpoint(ep, netip.PrefixFrom(addr, topo.UnderlayBits), netip.Addr{}); err != nil {
		return nil, err
	}
	return &topo.Endpoint{Name: name, Host: h, NS: ep.ns, Addr: addr}, nil
}

func (m *macvlanMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	return direct(ep, port)
}
