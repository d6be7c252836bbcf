package kernel

import (
	"crypto/sha256"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"cnbench/internal/mode"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// WireGuard is routed veth endpoints, as the veth mode places them, whose
// traffic between hosts crosses a WireGuard tunnel: each host has a
// WireGuard device with every other host as a peer, allowed the peer's
// endpoint subnets, and routes those subnets into it, as Calico's and
// Cilium's WireGuard encryption and flannel's wireguard backend do.
const WireGuard = "wireguard"

const (
	wgName = "wg0"
	wgPort = 51820 // WireGuard's customary port
	// wgOverhead is what WireGuard adds over an IPv4 underlay: outer IP
	// 20, UDP 8, its header 16 and the Poly1305 tag 16. Endpoint links
	// take the underlay's MTU less this, so a full-sized packet never
	// needs fragmenting in the tunnel.
	wgOverhead = 20 + 8 + 16 + 16
)

type wireguardMode struct {
	vethMode
	built bool
}

func newWireGuardMode(t *topo.Topology) mode.Mode {
	return &wireguardMode{vethMode: vethMode{t: t, n: Counter{}, mtu: t.MTU() - wgOverhead}}
}

// wireguardAvailable probes for WireGuard links.
//
// Equivalent to: ip link add wg0 type wireguard
func wireguardAvailable() error {
	return mode.Probe("link:wireguard", func(_ *netns.NS, h *netlink.Handle, _ netlink.Link) error {
		if err := h.LinkAdd(&netlink.Wireguard{LinkAttrs: netlink.LinkAttrs{Name: wgName}}); err != nil {
			return mode.KernelLacks("wireguard links", err)
		}
		return nil
	})
}

// Endpoint places a routed endpoint on host h, building every host's
// tunnel first.
func (m *wireguardMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	if err := alone(WireGuard, m.t, h); err != nil {
		return nil, err
	}
	if !m.built {
		// Every host must know every other before the first packet.
		for _, host := range m.t.Hosts {
			if err := m.buildHost(host); err != nil {
				return nil, err
			}
		}
		m.built = true
	}
	return m.vethMode.Endpoint(h, name)
}

// buildHost gives host h its WireGuard device, with each other host as a
// peer at its underlay address, and routes the other hosts' endpoint
// subnets into it instead of to their NICs.
//
// Equivalent to:
//
//	ip link add wg0 mtu M type wireguard
//	wg set wg0 private-key KEY(H) listen-port 51820
//	wg set wg0 peer PUB(P) endpoint P:51820 allowed-ips SUBNETS(P)   (each other host P)
//	ip link set wg0 up
//	ip route replace SUBNET(P) dev wg0                                (each subnet of each P)
func (m *wireguardMode) buildHost(h *topo.Host) error {
	wg := &netlink.Wireguard{LinkAttrs: netlink.LinkAttrs{Name: wgName, MTU: m.mtu}}
	if err := h.Handle.LinkAdd(wg); err != nil {
		return fmt.Errorf("create %s in %q: %w", wgName, h.NS.Name, err)
	}
	cfg := wgtypes.Config{PrivateKey: ptr(wgKey(m.t.Token, h.Index)), ListenPort: ptr(wgPort), ReplacePeers: true}
	others := m.t.Others(h)
	for _, p := range others {
		peer := wgtypes.PeerConfig{PublicKey: wgKey(m.t.Token, p.Index).PublicKey(),
			Endpoint: &net.UDPAddr{IP: net.IP(p.Addr.AsSlice()), Port: wgPort}}
		for _, s := range topo.EndpointSubnets(p.Index) {
			peer.AllowedIPs = append(peer.AllowedIPs, *topo.IPNet(s))
		}
		cfg.Peers = append(cfg.Peers, peer)
	}
	// The configuration travels over generic netlink, whose socket
	// belongs to the namespace it is opened in.
	err := h.NS.Do(func() error {
		c, err := wgctrl.New()
		if err != nil {
			return err
		}
		defer c.Close()
		return c.ConfigureDevice(wgName, cfg)
	})
	if err != nil {
		return fmt.Errorf("configure %s in %q: %w", wgName, h.NS.Name, err)
	}
	link, err := h.Handle.LinkByName(wgName)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", wgName, h.NS.Name, err)
	}
	if err := h.Handle.LinkSetUp(link); err != nil {
		return fmt.Errorf("set %s up in %q: %w", wgName, h.NS.Name, err)
	}
	for _, p := range others {
		for _, s := range topo.EndpointSubnets(p.Index) {
			r := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: topo.IPNet(s), Scope: netlink.SCOPE_LINK}
			if err := h.Handle.RouteReplace(r); err != nil {
				return fmt.Errorf("route %s into %s in %q: %w", s, wgName, h.NS.Name, err)
			}
		}
	}
	return nil
}

// wgKey is host index's private key, derived from the run token so that
// every host of the topology, guests included, knows every other's
// public key without an exchange of its own; as with the ESP keys, the
// cipher's work is what cnbench measures, not the secret.
func wgKey(token netns.Token, index int) wgtypes.Key {
	k := wgtypes.Key(sha256.Sum256([]byte(fmt.Sprintf("cnbench wireguard %s %d", token, index))))
	// A Curve25519 private key's clamping (RFC 7748).
	k[0] &= 248
	k[31] = k[31]&127 | 64
	return k
}

func ptr[T any](v T) *T { return &v }
