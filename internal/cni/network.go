package cni

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"cnbench/internal/netns"
)

// IfName is the endpoint's interface, as in a container.
const IfName = "eth0"

// Network is a configuration made ready to run on one host: its plugins
// run with the host's namespace as their own, and keep their IPAM leases
// and libcni's cache in a private directory.
type Network struct {
	Config *Config
	// Doc is the configuration exactly as the plugins are given it.
	Doc  []byte
	host *netns.NS
	dir  string
	list *libcni.NetworkConfigList
	cni  *libcni.CNIConfig
	rts  []*libcni.RuntimeConf
}

// Open prepares conf for the host namespace host; role names the private
// directory within run tok.
func Open(conf *Config, host *netns.NS, tok netns.Token, role string, plan HostPlan) (*Network, error) {
	for _, typ := range conf.Plugins() {
		if _, err := PluginPath(typ); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", tok.Name("cni-"+role)+"-")
	if err != nil {
		return nil, fmt.Errorf("cni directory for %q: %w", host.Name, err)
	}
	plan.DataDir = filepath.Join(dir, "ipam")
	doc, err := conf.ForHost(plan)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	list, err := libcni.ConfListFromBytes(doc)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("cni config %s: %w", conf.Source, err), os.RemoveAll(dir))
	}
	return &Network{
		Config: conf, Doc: doc, host: host, dir: dir, list: list,
		cni: libcni.NewCNIConfigWithCacheDir(PluginDirs, filepath.Join(dir, "cache"), nil),
	}, nil
}

// Add connects the endpoint namespace ep, as container id, and returns
// the endpoint's IPv4 address. ports are handed to a portmap plugin as
// mappings from the same port on the host.
//
// Equivalent to: ip netns exec HOST env CNI_COMMAND=ADD CNI_CONTAINERID=ID
// CNI_NETNS=/var/run/netns/EP CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni PLUGIN < CONFIG,
// for each plugin of the list
func (n *Network) Add(ctx context.Context, ep *netns.NS, id string, ports []int) (netip.Addr, error) {
	rt := &libcni.RuntimeConf{ContainerID: id, NetNS: ep.Path(), IfName: IfName}
	if len(ports) > 0 && n.Config.PortMappings() {
		var mappings []map[string]any
		for _, p := range ports {
			for _, proto := range []string{"tcp", "udp"} {
				mappings = append(mappings, map[string]any{"hostPort": p, "containerPort": p, "protocol": proto})
			}
		}
		rt.CapabilityArgs = map[string]any{"portMappings": mappings}
	}
	var res *types100.Result
	// The plugins are forked from this thread, so they start in the
	// host's namespace.
	err := n.host.Do(func() error {
		r, err := n.cni.AddNetworkList(ctx, n.list, rt)
		if err != nil {
			return err
		}
		res, err = types100.NewResultFromResult(r)
		return err
	})
	n.rts = append(n.rts, rt)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("cni add %s (%s) to %q from %q: %w", n.list.Name, n.Config.Source, ep.Name, n.host.Name, err)
	}
	for _, ip := range res.IPs {
		if a, ok := netip.AddrFromSlice(ip.Address.IP.To4()); ok && ip.Address.IP.To4() != nil {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("cni add %s to %q: the result has no IPv4 address", n.list.Name, ep.Name)
}

// Close deletes every attachment, newest first, so the plugins release
// their addresses and remove their rules, and then the private directory.
func (n *Network) Close() error {
	var errs []error
	for i := len(n.rts) - 1; i >= 0; i-- {
		rt := n.rts[i]
		errs = append(errs, n.host.Do(func() error {
			if err := n.cni.DelNetworkList(context.Background(), n.list, rt); err != nil {
				return fmt.Errorf("cni del %s for %s: %w", n.list.Name, rt.ContainerID, err)
			}
			return nil
		}))
	}
	n.rts = nil
	if err := os.RemoveAll(n.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove cni directory %s: %w", n.dir, err))
	}
	return errors.Join(errs...)
}
