package mode

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"cnbench/configs"
	"cnbench/internal/cni"
	"cnbench/internal/model"
	"cnbench/internal/topo"
)

// CNIPrefix starts the modes that run a CNI configuration: `cni:FILE`
// names a .conf or .conflist file, or one shipped in configs/cni by its
// name (`cni:bridge`). The plugins run through libcni with each emulated
// host's namespace as their own and the endpoint's as the container's.
const CNIPrefix = "cni:"

// CNIPattern is the entry that stands for every cni: mode in Names, and
// that scenario validation accepts by prefix.
const CNIPattern = CNIPrefix + "*"

func init() {
	register(Descriptor{
		Name:      CNIPattern,
		Summary:   "any CNI config or conflist, run through libcni and the plugins in " + strings.Join(cni.PluginDirs, " or ") + "; shipped: " + strings.Join(configs.CNINames(), ", "),
		Available: cniPluginsAvailable,
		New: func(*topo.Topology) Mode {
			return failingMode{fmt.Errorf("mode %s: name a configuration, such as cni:bridge or cni:./my.conflist", CNIPattern)}
		},
	})
}

// lookupCNI makes the descriptor of a cni: mode.
func lookupCNI(name string) (Descriptor, bool) {
	arg, ok := strings.CutPrefix(name, CNIPrefix)
	if !ok || arg == "" {
		return Descriptor{}, false
	}
	conf, loadErr := loadCNI(arg)
	return Descriptor{
		Name:    name,
		Summary: "the CNI configuration " + arg,
		Available: func() error {
			if loadErr != nil {
				return loadErr
			}
			for _, typ := range conf.Plugins() {
				if _, err := cni.PluginPath(typ); err != nil {
					return unsupported("%v", err)
				}
			}
			return nil
		},
		Record: func(p *model.Params) {
			if loadErr != nil {
				return
			}
			if doc, err := conf.ForHost(cniPlan(1, "IPAM_DIR")); err == nil {
				p.ModeConfig = string(doc)
			}
		},
		New: func(t *topo.Topology) Mode {
			if loadErr != nil {
				return failingMode{loadErr}
			}
			return &cniMode{t: t, conf: conf, nets: map[int]*cni.Network{}}
		},
	}, true
}

// loadCNI reads a configuration file, or a shipped one by name.
func loadCNI(arg string) (*cni.Config, error) {
	data, err := os.ReadFile(arg)
	source := arg
	if err != nil {
		var ok bool
		if source, data, ok = configs.CNI(arg); !ok {
			return nil, fmt.Errorf("cni config %q: %w; shipped configurations: %s", arg, err, strings.Join(configs.CNINames(), ", "))
		}
	}
	return cni.Parse(source, data)
}

func cniPluginsAvailable() error {
	for _, typ := range []string{"bridge", "host-local"} {
		if _, err := cni.PluginPath(typ); err != nil {
			return unsupported("%v", err)
		}
	}
	return nil
}

// cniPlan adapts a configuration to host i.
func cniPlan(i int, dataDir string) cni.HostPlan {
	return cni.HostPlan{
		Index:     i,
		Endpoints: topo.EndpointSubnet(i),
		WireStart: topo.WireAddr(i, 1),
		WireEnd:   topo.WireAddr(i, topo.MaxEndpointsPerHost),
		NIC:       topo.NICName,
		DataDir:   dataDir,
	}
}

type cniMode struct {
	t     *topo.Topology
	conf  *cni.Config
	nets  map[int]*cni.Network
	ports []int
	added int
}

var (
	_ Mode      = (*cniMode)(nil)
	_ Publisher = (*cniMode)(nil)
)

func (m *cniMode) Publish(ports ...int) { m.ports = append(m.ports, ports...) }

// Endpoint creates an empty endpoint namespace and has the plugins
// connect it.
//
// Equivalent to: ip netns add EP; CNI_COMMAND=ADD CNI_NETNS=/var/run/netns/EP ... (see package cni)
func (m *cniMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	n, ok := m.nets[h.Index]
	if !ok {
		var err error
		n, err = cni.Open(m.conf, h.NS, m.t.Token, h.Name, cniPlan(h.Index, ""))
		if err != nil {
			return nil, err
		}
		m.t.OnClose(n.Close)
		m.nets[h.Index] = n
	}
	ns, _, err := m.t.NewNamespace(name)
	if err != nil {
		return nil, err
	}
	var ports []int
	if m.added == 0 {
		ports = m.ports // the server's, published on its host
	}
	m.added++
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr, err := n.Add(ctx, ns, m.t.Token.Name(name), ports)
	if err != nil {
		return nil, err
	}
	return &topo.Endpoint{Name: name, Host: h, NS: ns, Addr: addr}, nil
}

// Expose gives the host's address for ports a portmap plugin published,
// and the endpoint's own otherwise.
func (m *cniMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	if m.conf.PortMappings() && slices.Contains(m.ports, port) {
		return netip.AddrPortFrom(ep.Host.Addr, uint16(port)), nil
	}
	return direct(ep, port)
}

// failingMode reports why a mode cannot be built, at the first endpoint.
type failingMode struct{ err error }

func (f failingMode) Endpoint(*topo.Host, string) (*topo.Endpoint, error) { return nil, f.err }
func (f failingMode) Expose(*topo.Endpoint, int) (netip.AddrPort, error) {
	return netip.AddrPort{}, f.err
}
