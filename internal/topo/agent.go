package topo

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"

	"cnbench/internal/netns"
)

// BuildOnParent builds host index of a topology whose hosts are real
// machines on one segment: the host is a namespace of this machine whose
// NIC is a macvlan, in bridge mode, of parent, the machine's real NIC.
// The real NIC itself is never configured: its addresses, routes, MTU and
// offloads stay as they are, and the macvlan is created straight inside
// the host's namespace, so no new link ever shows in the machine's own.
// The host takes its underlay address 198.18.0.INDEX and routes to the
// endpoint subnets of the other hosts of the topology, as chhc's hosts do.
// The other hosts appear in the topology's Peers, not in Hosts: this
// machine holds no namespace of theirs.
//
// Equivalent to:
//
//	ip netns add cnb-TOKEN-hI
//	ip link add nic0 link PARENT netns cnb-TOKEN-hI type macvlan mode bridge
//	ip -n cnb-TOKEN-hI addr add 198.18.0.I/16 dev nic0; ip -n ... link set nic0 up
//	ip -n cnb-TOKEN-hI route add 198.19.J.0/24 via 198.18.0.J   (each other host J)
func BuildOnParent(kind string, token netns.Token, opts Options, index, hosts int, parent netlink.Link) (t *Topology, err error) {
	if kind != CHHC {
		return nil, fmt.Errorf("build %s on machine NICs: only %s spans real machines", kind, CHHC)
	}
	if index < 1 || index > hosts || hosts > BaseEndpointsPerHost {
		return nil, fmt.Errorf("build %s on machine NICs: host %d of %d", kind, index, hosts)
	}
	t = &Topology{Kind: kind, Token: token, Opts: opts}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close())
			t = nil
		}
	}()
	h, err := t.newHost(index, HostAddr(index), netip.PrefixFrom(HostAddr(index), UnderlayBits).Masked(), netip.Addr{})
	if err != nil {
		return t, err
	}
	if pm := parent.Attrs().MTU; t.MTU() > pm {
		return t, fmt.Errorf("%w: MTU %d exceeds the %d of the machine's NIC %s, which cnbench does not change", ErrNICLimit, t.MTU(), pm, parent.Attrs().Name)
	}
	nic := &netlink.Macvlan{
		LinkAttrs: netlink.LinkAttrs{Name: NICName, MTU: t.MTU(), ParentIndex: parent.Attrs().Index, Namespace: netlink.NsFd(int(h.NS.Handle()))},
		Mode:      netlink.MACVLAN_MODE_BRIDGE,
	}
	if err := netlink.LinkAdd(nic); err != nil {
		return t, fmt.Errorf("create macvlan %s of %s in %q: %w", NICName, parent.Attrs().Name, h.NS.Name, err)
	}
	// The kernel destroys a deleted namespace, and the links in it, in
	// its own time; until then this NIC would still answer for the
	// host's address on the machines' segment, beside the next case's
	// host with the same address. Its removal therefore comes first, and
	// at once.
	//
	// Equivalent to: ip -n cnb-TOKEN-hI link del nic0
	t.OnClose(func() error {
		link, err := h.Handle.LinkByName(NICName)
		if err != nil {
			return nil
		}
		if err := h.Handle.LinkDel(link); err != nil {
			return fmt.Errorf("remove %s from %q: %w", NICName, h.NS.Name, err)
		}
		return nil
	})
	if err := t.configureNIC(h, NICName, netip.PrefixFrom(h.Addr, UnderlayBits)); err != nil {
		return t, err
	}
	for j := 1; j <= hosts; j++ {
		if j == index {
			continue
		}
		t.Peers = append(t.Peers, HostAddr(j))
	}
	return t, t.RouteEndpoints(EndpointSubnets)
}

// ErrNICLimit marks a host control a machine's real NIC cannot give
// without cnbench changing it.
var ErrNICLimit = errors.New("beyond the machine's NIC")
