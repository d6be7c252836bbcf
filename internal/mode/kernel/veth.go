package kernel

import (
	"net/netip"

	"github.com/vishvananda/netlink"

	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/topo"
)

// Veth is a routed point-to-point veth pair per endpoint, as the CNI ptp
// plugin builds: the endpoint holds a /32 and routes everything through
// the host's side, which answers for the gateway address; the host routes
// the endpoint's /32 back into the pair.
const Veth = "veth"

type vethMode struct {
	t *topo.Topology
	n Counter
	// mtu is the endpoints' links' MTU: the topology's unless a tunnel
	// between hosts takes some of it (WireGuard).
	mtu int
}

var _ mode.Mode = (*vethMode)(nil)

func newVethMode(t *topo.Topology) mode.Mode { return &vethMode{t: t, n: Counter{}, mtu: t.MTU()} }

// Endpoint places a routed point-to-point endpoint on host h.
//
// Equivalent to:
//
//	ip -n HOST link add v-NAME type veth peer name eth0 netns EP
//	ip -n HOST addr add 198.19.I.254/32 dev v-NAME scope link
//	ip -n EP addr add 198.19.I.N/32 dev eth0; ip -n EP link set eth0 up
//	ip -n EP route add 198.19.I.254 dev eth0 scope link
//	ip -n EP route add default via 198.19.I.254
//	ip -n HOST route add 198.19.I.N/32 dev v-NAME src 198.19.I.254
func (m *vethMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	n, err := m.n.NextWithin(h, model.MaxEndpointsPerHost)
	if err != nil {
		return nil, err
	}
	ep, err := newEndpointNS(m.t, name)
	if err != nil {
		return nil, err
	}
	hostSide, err := vethInto(h, ep, "v-"+name, m.mtu)
	if err != nil {
		return nil, err
	}
	gw := topo.Gateway(h.Index)
	// The same gateway address sits on every host-side veth, scoped to
	// its link, as ptp does.
	f := m.t.Family()
	if err := f.AddAddress(h.Handle, h.NS.Name, hostSide, netip.PrefixFrom(gw, 32), netlink.SCOPE_LINK); err != nil {
		return nil, err
	}
	addr := topo.EndpointAddr(h.Index, n)
	if err := configureEndpoint(ep, netip.PrefixFrom(addr, 32), gw); err != nil {
		return nil, err
	}
	back := topo.Route{Link: hostSide.Attrs().Index, Dst: netip.PrefixFrom(addr, 32), OnLink: true, Src: gw}
	if err := f.AddRoute(h.Handle, h.NS.Name, back); err != nil {
		return nil, err
	}
	if err := pinNeighbours(h, hostSide, ep, addr, gw); err != nil {
		return nil, err
	}
	return &topo.Endpoint{Name: name, Host: h, NS: ep.ns, Addr: f.Dial(addr)}, nil
}

func (m *vethMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	return Direct(ep, port)
}
