package kubelab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/vishvananda/netlink"

	"cnbench/internal/netns"
)

// The lab numbers its networks from the upper half of 198.18.0.0/16, which
// cnbench's own topologies leave alone (package topo uses 198.18.0.0/17
// for its underlay and 198.19.0.0/16 behind its hosts), so a cnbench run
// inside a pod never meets the lab's addresses on its own paths:
//
//	198.18.224.0/24  the nodes' network: the control plane is .1
//	                 (the API server), node i is .(10+i)
//	198.18.160.0/19  the pods: node i numbers its pods in 198.18.(160+i).0/24
//	198.18.232.0/24  the Services' ClusterIPs; .1 is the API server's
var (
	NodeNetwork = netip.MustParsePrefix("198.18.224.0/24")
	ClusterCIDR = netip.MustParsePrefix("198.18.160.0/19")
	ServiceCIDR = netip.MustParsePrefix("198.18.232.0/24")
	// ControlPlaneAddr is the control plane's, and so the API server's,
	// address.
	ControlPlaneAddr = netip.MustParseAddr("198.18.224.1")
)

// APIPort is the API server's port.
const APIPort = 6443

// NodeAddr is node i's address (i from 1).
func NodeAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, 224, byte(10 + i)}) }

// PodCIDR is where node i numbers its pods.
func PodCIDR(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(160 + i), 0}), PodCIDRBits)
}

// PodCIDRBits is the length of a node's pod CIDR.
const PodCIDRBits = 24

// FlannelVXLANPort is the UDP port of flannel's VXLAN between nodes,
// the kernel's and flannel's default.
const FlannelVXLANPort = 8472

// KubernetesServiceIP is the ClusterIP of the API server's own Service,
// the first of ServiceCIDR.
func KubernetesServiceIP() netip.Addr { return ServiceCIDR.Addr().Next() }

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// buildNetwork makes the switch's namespace with its bridge, the control
// plane's namespace and each node's, each cabled to the switch by a veth,
// and the routes to every node's pods.
//
// Equivalent to, with the switch SW, the control plane CP and for each
// node N, i:
//
//	ip netns add SW; ip -n SW link add cnb-T-kbr type bridge; ip -n SW link set cnb-T-kbr up
//	ip netns add CP; ip -n SW link add cnb-T-kvcp master cnb-T-kbr type veth peer cnb-T-kcp netns CP
//	ip -n CP addr add 198.18.224.1/24 dev cnb-T-kcp
//	ip netns add N; ip -n SW link add cnb-T-kvI master cnb-T-kbr type veth peer cnb-T-knI netns N
//	ip -n N addr add 198.18.224.(10+i)/24 dev cnb-T-knI; ip -n N route add default via 198.18.224.1
//	ip -n N route add PODCIDR(j) via NODE(j)   (every other node j; not with flannel)
//	ip -n CP route add PODCIDR(i) via NODE(i)
func (c *Cluster) buildNetwork() error {
	sw, err := netns.Create(c.Token.Name("k8ssw"))
	if err != nil {
		return err
	}
	c.sw = sw
	h, err := netlink.NewHandleAt(sw.Handle())
	if err != nil {
		return fmt.Errorf("netlink in %q: %w", sw.Name, err)
	}
	defer h.Close()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: c.Token.Name("kbr")}}
	if err := h.LinkAdd(br); err != nil {
		return fmt.Errorf("create bridge %s in %q: %w", br.Name, sw.Name, err)
	}
	if err := h.LinkSetUp(br); err != nil {
		return fmt.Errorf("set %s up: %w", br.Name, err)
	}
	cp, err := netns.Create(c.Token.Name("k8scp"))
	if err != nil {
		return err
	}
	c.cp, c.ControlPlane = cp, cp.Path()
	cph, err := c.cable(h, br, cp, "kvcp", c.Token.Name("kcp"), ControlPlaneAddr)
	if err != nil {
		return err
	}
	defer cph.Close()
	for i := range c.Nodes {
		if err := c.wireNode(h, br, i); err != nil {
			return err
		}
		n := &c.Nodes[i]
		if err := cph.RouteAdd(&netlink.Route{Dst: ipNet(n.PodCIDR), Gw: n.Addr.AsSlice()}); err != nil {
			return fmt.Errorf("route to %s in %q: %w", n.PodCIDR, cp.Name, err)
		}
	}
	return nil
}

// cable joins namespace ns to the switch's bridge by a veth, whose end
// in ns is named nic and holds addr, and returns a netlink handle in ns.
func (c *Cluster) cable(swh *netlink.Handle, br *netlink.Bridge, ns *netns.NS, port, nic string, addr netip.Addr) (*netlink.Handle, error) {
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: c.Token.Name(port), MasterIndex: br.Attrs().Index},
		PeerName:      nic,
		PeerNamespace: netlink.NsFd(int(ns.Handle())),
	}
	if err := swh.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("create veth %s to %q: %w", veth.Name, ns.Name, err)
	}
	if err := swh.LinkSetUp(veth); err != nil {
		return nil, fmt.Errorf("set %s up: %w", veth.Name, err)
	}
	h, err := netlink.NewHandleAt(ns.Handle())
	if err != nil {
		return nil, fmt.Errorf("netlink in %q: %w", ns.Name, err)
	}
	link, err := h.LinkByName(nic)
	if err == nil {
		err = upWithAddr(h, link, netip.PrefixFrom(addr, NodeNetwork.Bits()))
	}
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("%s in %q: %w", nic, ns.Name, err)
	}
	return h, nil
}

// wireNode makes node i's namespace, its cable to the switch and its
// routes.
func (c *Cluster) wireNode(swh *netlink.Handle, br *netlink.Bridge, i int) error {
	n := &c.Nodes[i]
	ns, err := netns.Create(n.Name)
	if err != nil {
		return err
	}
	n.ns = ns
	if err := ns.Sysctl("net.ipv4.ip_forward", "1"); err != nil {
		return err
	}
	if c.CNI == CNIBridge || c.CNI == CNIFlannel {
		// kube-proxy's rules must see what the bridge forwards between a
		// node's pods, or a Service's reply skips its NAT. The setting is
		// the namespace's own; the module that provides it is the
		// machine's, and cnbench loads none.
		if err := ns.Sysctl("net.bridge.bridge-nf-call-iptables", "1"); err != nil {
			return fmt.Errorf("kubelab: the bridge CNI needs the kernel's br_netfilter module, which is not loaded here (cnbench loads no module; load it, or run the ptp CNI): %w", err)
		}
	}
	n.NIC = NodeNIC(c.Token, i+1)
	h, err := c.cable(swh, br, ns, "kv"+strconv.Itoa(i+1), n.NIC, n.Addr)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := h.RouteAdd(&netlink.Route{Gw: ControlPlaneAddr.AsSlice()}); err != nil {
		return fmt.Errorf("default route in %q: %w", ns.Name, err)
	}
	for j := range c.Nodes {
		// flanneld routes to the other nodes' pods through its overlay.
		if j == i || c.CNI == CNIFlannel {
			continue
		}
		other := &c.Nodes[j]
		if err := h.RouteAdd(&netlink.Route{Dst: ipNet(other.PodCIDR), Gw: other.Addr.AsSlice()}); err != nil {
			return fmt.Errorf("route to %s in %q: %w", other.PodCIDR, ns.Name, err)
		}
	}
	return nil
}

// NodeNIC is the name of node i's link to the others (i from 1), in the
// node's namespace, in a lab of token tok.
func NodeNIC(tok netns.Token, i int) string { return tok.Name("kn" + strconv.Itoa(i)) }

func upWithAddr(h *netlink.Handle, link netlink.Link, addr netip.Prefix) error {
	if err := h.AddrAdd(link, &netlink.Addr{IPNet: &net.IPNet{IP: addr.Addr().AsSlice(), Mask: net.CIDRMask(addr.Bits(), 32)}}); err != nil {
		return fmt.Errorf("address %s on %s: %w", addr, link.Attrs().Name, err)
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("set %s up: %w", link.Attrs().Name, err)
	}
	return nil
}

// removeNetwork deletes the nodes' namespaces, the control plane's and
// the switch's; their links go with them.
func (c *Cluster) removeNetwork() error {
	var errs []error
	for i := range c.Nodes {
		if c.Nodes[i].ns != nil {
			errs = append(errs, c.Nodes[i].ns.Delete())
			c.Nodes[i].ns = nil
		}
	}
	if c.cp != nil {
		errs = append(errs, c.cp.Delete())
		c.cp = nil
	}
	if c.sw != nil {
		errs = append(errs, c.sw.Delete())
		c.sw = nil
	}
	return errors.Join(errs...)
}
