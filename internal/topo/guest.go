package topo

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"

	"cnbench/internal/netns"
)

// AdoptNIC builds, inside a VM, the host the VM is to its topology: a
// namespace like an emulated host's, whose nic0 is the VM's own NIC (the
// link with the given MAC, moved in and renamed), addressed on the
// underlay and routed to the other hosts' endpoint subnets. Modes then
// place endpoints on it exactly as on an emulated host. The other hosts,
// each the gateway of its endpoint subnets, become the topology's Peers,
// so modes that span hosts (overlay, wireguard) know them.
//
// Equivalent to: ip netns add HOST; ip link set eth0 down; ip link set
// eth0 name nic0 netns HOST; ip -n HOST addr add ADDR dev nic0; ip -n
// HOST link set nic0 up; ip -n HOST route add DST via VIA
func AdoptNIC(token netns.Token, opts Options, index int, mac net.HardwareAddr, addr netip.Prefix, routes map[netip.Prefix]netip.Addr) (t *Topology, h *Host, err error) {
	built := &Topology{Kind: "guest", Token: token, Opts: opts}
	defer func() {
		if err != nil {
			err = errors.Join(err, built.Close())
			t, h = nil, nil
		}
	}()
	t = built
	links, err := netlink.LinkList()
	if err != nil {
		return nil, nil, fmt.Errorf("adopt NIC %s: %w", mac, err)
	}
	var nic netlink.Link
	for _, l := range links {
		if bytes.Equal(l.Attrs().HardwareAddr, mac) {
			nic = l
		}
	}
	if nic == nil {
		return nil, nil, fmt.Errorf("adopt NIC: no link has MAC %s", mac)
	}
	h, err = t.newHost(index, addr.Addr(), addr.Masked(), netip.Addr{})
	if err != nil {
		return nil, nil, err
	}
	name := nic.Attrs().Name
	if err := netlink.LinkSetDown(nic); err != nil {
		return nil, nil, fmt.Errorf("adopt NIC %s: set down: %w", name, err)
	}
	if err := netlink.LinkSetName(nic, NICName); err != nil {
		return nil, nil, fmt.Errorf("adopt NIC %s: rename to %s: %w", name, NICName, err)
	}
	if err := netlink.LinkSetMTU(nic, t.MTU()); err != nil {
		return nil, nil, fmt.Errorf("adopt NIC %s: mtu %d: %w", name, t.MTU(), err)
	}
	if err := netlink.LinkSetNsFd(nic, int(h.NS.Handle())); err != nil {
		return nil, nil, fmt.Errorf("adopt NIC %s: move into %q: %w", name, h.NS.Name, err)
	}
	if err := t.configureNIC(h, NICName, addr); err != nil {
		return nil, nil, err
	}
	for dst, via := range routes {
		if err := t.addRoute(h, dst, via); err != nil {
			return nil, nil, err
		}
		if !slices.Contains(t.Peers, via) {
			t.Peers = append(t.Peers, via)
		}
	}
	slices.SortFunc(t.Peers, netip.Addr.Compare)
	return t, h, nil
}
