package kernel

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnbench/internal/mode"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// OverlayIPsec is the overlay with its VXLAN traffic between hosts
// encrypted by IPsec ESP in transport mode, as Docker Swarm's encrypted
// overlay networks (--opt encrypted) do: AES-GCM with a 128-bit key
// (rfc4106(gcm(aes))), one security association per direction and pair
// of hosts, and policies that send every VXLAN datagram from one host to
// another through it and accept none that did not come through it.
const OverlayIPsec = "overlay:ipsec"

const (
	// espAEAD is the kernel's name of ESP's AES-GCM (RFC 4106), the
	// algorithm Docker Swarm's encrypted overlay uses; its key is 16
	// bytes of AES key and 4 of salt, its ICV 16 bytes.
	espAEAD   = "rfc4106(gcm(aes))"
	espKeyLen = 16 + 4
	espICVLen = 128
	// espOverhead is what transport-mode ESP with AES-GCM adds to each
	// VXLAN datagram at most: SPI and sequence number 8, IV 8, padding
	// to 4 bytes up to 3, pad length and next header 2, ICV 16.
	espOverhead = 8 + 8 + 3 + 2 + 16
)

// ipsecAvailable probes for both halves: VXLAN links and an ESP security
// association with AES-GCM, which needs xfrm_user, esp4 and the kernel's
// GCM.
//
// Equivalent to: ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp
// spi 0x100 mode transport aead 'rfc4106(gcm(aes))' KEY 128
func ipsecAvailable() error {
	if err := overlayAvailable(); err != nil {
		return err
	}
	return mode.Probe("xfrm:esp", func(_ *netns.NS, h *netlink.Handle, _ netlink.Link) error {
		a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
		if err := h.XfrmStateAdd(espState(netns.Token("probe"), a, b)); err != nil {
			if errors.Is(err, unix.ENOSYS) {
				// The kernel has xfrm but not the algorithm.
				return mode.Unsupported("the kernel cannot create ESP security associations with %s (%v)", espAEAD, err)
			}
			return mode.KernelLacks("ESP security associations", err)
		}
		return nil
	})
}

// secureVXLAN adds, in host h, the security associations and policies
// that encrypt the VXLAN traffic between h's underlay address and each
// other host's, both ways.
//
// Equivalent to, for each other host P (SPIs and keys derived from the
// run token and the pair, so that each host computes its peers' alike):
//
//	ip xfrm state add src H dst P proto esp spi SPI(H,P) mode transport aead 'rfc4106(gcm(aes))' KEY(H,P) 128
//	ip xfrm state add src P dst H proto esp spi SPI(P,H) mode transport aead 'rfc4106(gcm(aes))' KEY(P,H) 128
//	ip xfrm policy add src H/32 dst P/32 proto udp dport 4789 dir out tmpl src H dst P proto esp mode transport
//	ip xfrm policy add src P/32 dst H/32 proto udp dport 4789 dir in tmpl src P dst H proto esp mode transport
func secureVXLAN(t *topo.Topology, h *topo.Host, local netip.Addr, peers []netip.Addr) error {
	for _, peer := range peers {
		for _, sa := range []*netlink.XfrmState{espState(t.Token, local, peer), espState(t.Token, peer, local)} {
			if err := h.Handle.XfrmStateAdd(sa); err != nil {
				return fmt.Errorf("ESP security association %s -> %s in %q: %w", sa.Src, sa.Dst, h.NS.Name, err)
			}
		}
		for _, p := range []*netlink.XfrmPolicy{vxlanPolicy(local, peer, netlink.XFRM_DIR_OUT), vxlanPolicy(peer, local, netlink.XFRM_DIR_IN)} {
			if err := h.Handle.XfrmPolicyAdd(p); err != nil {
				return fmt.Errorf("ESP policy %s %s -> %s in %q: %w", p.Dir, p.Src, p.Dst, h.NS.Name, err)
			}
		}
	}
	return nil
}

// espState is the security association from src to dst. Its key and SPI
// are derived from the run token and the pair, not exchanged: cnbench
// measures what encryption costs, and the hosts of a topology (guests
// included) must agree on them without a key exchange of their own. The
// cipher's work is the same as with a secret key.
func espState(token netns.Token, src, dst netip.Addr) *netlink.XfrmState {
	sum := sha256.Sum256([]byte(fmt.Sprintf("cnbench esp %s %s %s", token, src, dst)))
	// SPIs below 256 are reserved (RFC 4303).
	spi := int(binary.BigEndian.Uint32(sum[espKeyLen:])&0x7fffffff) | 0x100
	return &netlink.XfrmState{
		Src: net.IP(src.AsSlice()), Dst: net.IP(dst.AsSlice()),
		Proto: netlink.XFRM_PROTO_ESP, Mode: netlink.XFRM_MODE_TRANSPORT, Spi: spi, ReplayWindow: 32,
		Aead: &netlink.XfrmStateAlgo{Name: espAEAD, Key: sum[:espKeyLen], ICVLen: espICVLen},
	}
}

// vxlanPolicy sends (out) or admits (in) VXLAN datagrams from src to dst
// only through ESP.
func vxlanPolicy(src, dst netip.Addr, dir netlink.Dir) *netlink.XfrmPolicy {
	host := func(a netip.Addr) *net.IPNet {
		return &net.IPNet{IP: net.IP(a.AsSlice()), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
	}
	return &netlink.XfrmPolicy{
		Src: host(src), Dst: host(dst), Proto: unix.IPPROTO_UDP, DstPort: vxlanPort, Dir: dir,
		Tmpls: []netlink.XfrmPolicyTmpl{{Src: net.IP(src.AsSlice()), Dst: net.IP(dst.AsSlice()),
			Proto: netlink.XFRM_PROTO_ESP, Mode: netlink.XFRM_MODE_TRANSPORT}},
	}
}
