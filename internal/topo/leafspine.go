package topo

import (
	"fmt"
	"net/netip"
)

// HostsPerLeaf is how many hosts a leaf router of leafspine:N takes; a
// leaf-spine topology has at least two leaves, so that traffic between
// hosts on different leaves crosses the spine.
const HostsPerLeaf = 8

// leaves is how many leaf routers leafspine:n has.
func leaves(n int) int { return max(2, (n+HostsPerLeaf-1)/HostsPerLeaf) }

// leafOf is the 1-based leaf that host i is cabled to: hosts turn
// through the leaves, so host 1 (the first server) and host 2 (the first
// client) are on different ones.
func leafOf(i, n int) int { return (i-1)%leaves(n) + 1 }

// uplink is leaf j's link to the spine: 198.18.(64+j).0/24, the spine at
// .1 and the leaf at .2, above every host's segment and below the
// extension blocks.
func uplink(j int) (spine, leaf netip.Prefix) {
	base := [4]byte{198, 18, byte(64 + j), 0}
	base[3] = 1
	spine = netip.PrefixFrom(netip.AddrFrom4(base), 24)
	base[3] = 2
	return spine, netip.PrefixFrom(netip.AddrFrom4(base), 24)
}

// buildLeafSpine makes n hosts, each cabled to a leaf router on a
// segment of its own as in routed, and the leaves cabled to one spine
// router. Hosts send everything of the benchmark range to their leaf; a
// leaf routes its hosts' endpoint subnets to them and the rest to the
// spine; the spine routes each host's segment and endpoint subnets to its
// leaf.
//
// Equivalent to, for each leaf J and each host I on it:
//
//	ip -n SP link add lJ type veth peer name up0 netns LJ
//	ip -n SP addr add 198.18.(64+J).1/24 dev lJ; ip -n LJ addr add 198.18.(64+J).2/24 dev up0
//	ip -n LJ route add 198.18.0.0/15 via 198.18.(64+J).1
//	ip -n LJ link add nicI type veth peer name nic0 netns HI
//	ip -n LJ addr add 198.18.I.254/24 dev nicI; ip -n HI addr add 198.18.I.253/24 dev nic0
//	ip -n HI route add 198.18.0.0/15 via 198.18.I.254
//	ip -n LJ route add 198.19.I.0/24 via 198.18.I.253
//	ip -n SP route add 198.18.I.0/24 via 198.18.(64+J).2; the same for 198.19.I.0/24
func (t *Topology) buildLeafSpine(n int) error {
	sns, sh, err := t.NewNamespace("sp")
	if err != nil {
		return err
	}
	if err := t.forward(sns); err != nil {
		return err
	}
	spine := &Host{Name: "sp", NS: sns, Handle: sh}
	leafRouters := make([]*Host, leaves(n)+1) // from 1
	for j := 1; j < len(leafRouters); j++ {
		name := fmt.Sprintf("l%d", j)
		lns, lh, err := t.NewNamespace(name)
		if err != nil {
			return err
		}
		if err := t.forward(lns); err != nil {
			return err
		}
		leaf := &Host{Name: name, NS: lns, Handle: lh}
		leafRouters[j] = leaf
		if err := t.wire(sh, sns, name, lns, "up0"); err != nil {
			return err
		}
		toSpine, toLeaf := uplink(j)
		if err := t.configureNIC(spine, name, toSpine); err != nil {
			return err
		}
		if err := t.configureNIC(leaf, "up0", toLeaf); err != nil {
			return err
		}
		if err := t.addRoute(leaf, Pool, toSpine.Addr()); err != nil {
			return err
		}
	}
	for i := 1; i <= n; i++ {
		j := leafOf(i, n)
		leaf := leafRouters[j]
		_, toLeaf := uplink(j)
		h, err := t.newHost(i, SegmentHostAddr(i), SegmentPrefix(i), SegmentRouterAddr(i))
		if err != nil {
			return err
		}
		port := fmt.Sprintf("nic%d", i)
		if err := t.wire(leaf.Handle, leaf.NS, port, h.NS, NICName); err != nil {
			return err
		}
		t.cabledTo(i, leaf.NS, leaf.Handle, port)
		if err := t.configureNIC(leaf, port, netip.PrefixFrom(SegmentRouterAddr(i), SegmentPrefix(i).Bits())); err != nil {
			return err
		}
		if err := t.configureNIC(h, NICName, netip.PrefixFrom(h.Addr, h.Segment.Bits())); err != nil {
			return err
		}
		if err := t.addRoute(h, Pool, h.Router); err != nil {
			return err
		}
		if err := t.addRoute(spine, SegmentPrefix(i), toLeaf.Addr()); err != nil {
			return err
		}
		for _, dst := range EndpointSubnets(i) {
			if err := t.addRoute(leaf, dst, h.Addr); err != nil {
				return err
			}
			if err := t.addRoute(spine, dst, toLeaf.Addr()); err != nil {
				return err
			}
		}
	}
	return nil
}
