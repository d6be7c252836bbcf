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

type hostMode struct{}

var _ mode.Mode = hostMode{}

func newHostMode(*topo.Topology) mode.Mode { return hostMode{} }

// Endpoint is the host itself.
func (hostMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	return &topo.Endpoint{Name: name, Host: h, NS: h.NS, Addr: h.Addr}, nil
}

func (hostMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) { return Direct(ep, port) }
