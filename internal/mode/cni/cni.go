package cni

import (
	"cnbench/internal/inputfile"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"cnbench/configs"
	cnilib "cnbench/internal/cni"
	"cnbench/internal/mode"
	"cnbench/internal/mode/kernel"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// CNIPrefix starts the modes that run a CNI configuration: `cni:FILE`
// names a .conf or .conflist file, or one shipped in configs/cni by its
// name (`cni:bridge`). The plugins run through libcni with each emulated
// host's namespace as their own and the endpoint's as the container's.
const CNIPrefix = "cni:"

// Pattern makes the row of every cni: mode, from the file it names.
var Pattern = mode.Pattern{Prefix: CNIPrefix, Make: Lookup}

// Rows are the shipped configurations as rows of their own, so that
// doctor and the tests know them.
func Rows() []mode.Descriptor {
	var rows []mode.Descriptor
	for _, name := range configs.CNINames() {
		d, _ := Lookup(CNIPrefix + name)
		d.Summary = "CNI: the shipped configs/cni/" + name + ".conflist (" + d.Summary + ")"
		rows = append(rows, d)
	}
	return rows
}

// Lookup makes the row of a cni: mode from the configuration it names.
func Lookup(name string) (mode.Descriptor, bool) {
	arg, ok := strings.CutPrefix(name, CNIPrefix)
	if !ok || arg == "" {
		return mode.Descriptor{}, false
	}
	conf, loadErr := loadCNI(arg)
	if loadErr != nil {
		loadErr = mode.BadInput(loadErr)
	}
	summary := "the CNI configuration " + arg
	if loadErr == nil {
		summary = strings.Join(conf.Plugins(), " + ")
	}
	return mode.Descriptor{
		Name:      name,
		Summary:   summary,
		Family:    mode.CNI,
		Uncounted: uncounted(conf),
		Addresses: addresses(conf),
		Available: func() error {
			if loadErr != nil {
				return loadErr
			}
			return cniAvailable(conf)
		},
		Supports: func(topology string) error {
			if loadErr == nil && topo.RoutesSegments(topology) && conf.OnWire() {
				return mode.NotApplicable("%s puts endpoints on one flat segment with %s, and %s splits the wire into routed segments", name, strings.Join(conf.Plugins(), " + "), topology)
			}
			return nil
		},
		Record: func(p *model.Params) {
			if loadErr != nil {
				return
			}
			if doc, err := conf.ForHost(cniPlan(1, 1, "IPAM_DIR")); err == nil {
				p.ModeConfig = string(doc)
			}
		},
		New: func(t *topo.Topology) mode.Mode {
			if loadErr != nil {
				return failingMode{loadErr}
			}
			return &cniMode{t: t, conf: conf, hosts: t.LastIndex(), nets: map[int]*cnilib.Network{}}
		},
	}, true
}

// uncounted are the link kinds a configuration's plugins create whose
// counters are not traffic: the bridge plugin's bridge.
func uncounted(conf *cnilib.Config) []string {
	if conf != nil && slices.Contains(conf.Plugins(), "bridge") {
		return []string{"bridge"}
	}
	return nil
}

// addresses is where a configuration's endpoints take their addresses
// from: subnets of its own, the host's segment for plugins on the wire,
// the endpoint subnet behind the host otherwise.
func addresses(conf *cnilib.Config) topo.Addressing {
	switch {
	case conf != nil && conf.OwnAddresses():
		return topo.ExternalAddresses
	case conf != nil && conf.OnWire():
		return topo.WireAddresses
	}
	return topo.SubnetAddresses
}

// maxConfigSize bounds a CNI configuration file; real ones are a few
// hundred bytes.
const maxConfigSize = 1 << 20

// loadCNI reads a configuration file, or a shipped one by name.
func loadCNI(arg string) (*cnilib.Config, error) {
	data, err := inputfile.Read(arg, maxConfigSize)
	source := arg
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cni config: %w", err)
	}
	if err != nil {
		var ok bool
		if source, data, ok = configs.CNI(arg); !ok {
			return nil, fmt.Errorf("cni config %q: %w; shipped configurations: %s", arg, err, strings.Join(configs.CNINames(), ", "))
		}
	}
	return cnilib.Parse(source, data)
}

// cniAvailable checks that the plugins are installed and that the kernel
// has what they create.
func cniAvailable(conf *cnilib.Config) error {
	for _, typ := range conf.Plugins() {
		if _, err := cnilib.PluginPath(typ); err != nil {
			return mode.Unsupported("%v", err)
		}
		var err error
		switch typ {
		case "macvlan":
			err = kernel.LinkAvailable(kernel.Macvlan)
		case "ipvlan":
			err = kernel.LinkAvailable(kernel.IPVlan)
		case "bandwidth":
			err = ifbAvailable()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ifbAvailable probes for the ifb devices the bandwidth plugin shapes
// ingress with.
func ifbAvailable() error {
	return mode.Probe("link:ifb", func(_ *netns.NS, h *netlink.Handle, _ netlink.Link) error {
		if err := h.LinkAdd(&netlink.Ifb{LinkAttrs: netlink.LinkAttrs{Name: "ifb-probe"}}); err != nil {
			return mode.KernelLacks("ifb links, which the bandwidth plugin needs", err)
		}
		return nil
	})
}

// cniPlan adapts a configuration to host i of hosts.
func cniPlan(i, hosts int, dataDir string) cnilib.HostPlan {
	return cnilib.HostPlan{
		Index:     i,
		Hosts:     hosts,
		Endpoints: topo.EndpointSubnet(i),
		WireStart: topo.WireAddr(i, 1),
		WireEnd:   topo.WireAddr(i, topo.BaseEndpointsPerHost),
		NIC:       topo.NICName,
		DataDir:   dataDir,
	}
}

type cniMode struct {
	t     *topo.Topology
	conf  *cnilib.Config
	hosts int
	// routed is set once the hosts route to each other's shares of the
	// configuration's own subnets.
	routed bool
	nets   map[int]*cnilib.Network
	ports  []int
	added  int
}

var (
	_ mode.Mode      = (*cniMode)(nil)
	_ mode.Publisher = (*cniMode)(nil)
)

func (m *cniMode) Publish(ports ...int) { m.ports = append(m.ports, ports...) }

// Endpoint creates an empty endpoint namespace and has the plugins
// connect it.
//
// Equivalent to: ip netns add EP; CNI_COMMAND=ADD CNI_NETNS=/var/run/netns/EP ... (see package cni)
func (m *cniMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	if err := m.routeShares(); err != nil {
		return nil, err
	}
	n, ok := m.nets[h.Index]
	if !ok {
		var err error
		n, err = cnilib.Open(m.conf, h.NS, m.t.Token, h.Name, cniPlan(h.Index, m.hosts, ""))
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

// routeShares routes, across hosts, each host's share of the
// configuration's own subnets to it, as the topology routes cnbench's
// endpoint subnets.
func (m *cniMode) routeShares() error {
	if m.routed || m.hosts < 2 {
		return nil
	}
	shares := map[int][]netip.Prefix{}
	for i := 1; i <= m.hosts; i++ {
		s, err := m.conf.RoutedSubnets(i, m.hosts)
		if err != nil {
			return mode.BadInput(fmt.Errorf("cni config %s: %w", m.conf.Source, err))
		}
		shares[i] = s
	}
	m.routed = true
	return m.t.RouteEndpoints(func(host int) []netip.Prefix { return shares[host] })
}

// Expose gives the host's address for ports a portmap plugin published,
// and the endpoint's own otherwise.
func (m *cniMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	if m.conf.PortMappings() && slices.Contains(m.ports, port) {
		return netip.AddrPortFrom(ep.Host.Addr, uint16(port)), nil
	}
	return kernel.Direct(ep, port)
}

// failingMode reports why a mode cannot be built, at the first endpoint.
type failingMode struct{ err error }

func (f failingMode) Endpoint(*topo.Host, string) (*topo.Endpoint, error) { return nil, f.err }
func (f failingMode) Expose(*topo.Endpoint, int) (netip.AddrPort, error) {
	return netip.AddrPort{}, f.err
}

// PluginsAvailable says whether cni:FILE modes can run here at all:
// the plugins' directory with at least the bridge and host-local plugins.
func PluginsAvailable() error {
	for _, typ := range []string{"bridge", "host-local"} {
		if _, err := cnilib.PluginPath(typ); err != nil {
			return mode.Unsupported("%v", err)
		}
	}
	return nil
}
