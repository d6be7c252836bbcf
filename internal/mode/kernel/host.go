package kernel

import (
	"net/netip"

	"cnbench/internal/mode"
	"cnbench/internal/topo"
)

// Host is the native baseline: no container, the engine runs in the
// host's namespace and uses the host's own address. Within one host the
// traffic therefore crosses loopback; across hosts, the NICs and the wire.
const Host = mode.Host

type hostMode struct{ family topo.Family }

var _ mode.Mode = hostMode{}

func newHostMode(t *topo.Topology) mode.Mode { return hostMode{family: t.Family()} }

// Endpoint is the host itself.
func (m hostMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	return &topo.Endpoint{Name: name, Host: h, NS: h.NS, Addr: m.family.Dial(h.Addr)}, nil
}

func (hostMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) { return Direct(ep, port) }
