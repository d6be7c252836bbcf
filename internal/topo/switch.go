package topo

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"

	"cnbench/internal/netns"
)

// The topologies of N hosts: "switch:N", all on one switch, and
// "leafspine:N", spread over leaf routers joined by a spine router.
const (
	switchPrefix    = "switch:"
	leafSpinePrefix = "leafspine:"
)

// ManyHostWords are how a scenario's vocabulary lists them.
var ManyHostWords = []string{switchPrefix + "*", leafSpinePrefix + "*"}

// Switch is the topology of n hosts on one switch.
func Switch(n int) string { return switchPrefix + strconv.Itoa(n) }

// LeafSpine is the topology of n hosts on leaf routers under a spine.
func LeafSpine(n int) string { return leafSpinePrefix + strconv.Itoa(n) }

// Shown are the topologies as help and doctor list them, with the name
// each is checked by: switch:N by switch:2, leafspine:N by leafspine:2.
func Shown() (names, checked []string) {
	names = append(slices.Clone(Kinds), switchPrefix+"N", leafSpinePrefix+"N")
	checked = append(slices.Clone(Kinds), Switch(2), LeafSpine(2))
	return names, checked
}

// SwitchHosts is how many hosts a switch topology joins; 0 when kind is
// not one (or its count is not a number).
func SwitchHosts(kind string) int { return countAfter(kind, switchPrefix) }

// LeafSpineHosts is how many hosts a leaf-spine topology holds; 0 when
// kind is not one.
func LeafSpineHosts(kind string) int { return countAfter(kind, leafSpinePrefix) }

// ManyHosts is how many hosts a switch or leaf-spine topology holds; 0
// for the others.
func ManyHosts(kind string) int { return max(SwitchHosts(kind), LeafSpineHosts(kind)) }

// RoutesSegments reports whether a topology gives each host a segment of
// its own, routed to the others' (routed, leafspine:N): endpoints on the
// wire then number within the host's /24 and reach other hosts' through
// their gateway.
func RoutesSegments(kind string) bool { return kind == Routed || LeafSpineHosts(kind) > 0 }

func countAfter(kind, prefix string) int {
	s, ok := strings.CutPrefix(kind, prefix)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || strconv.Itoa(n) != s {
		return 0
	}
	return n
}

// CheckKind reports whether kind names a topology cnbench builds, with
// the reason when not.
func CheckKind(kind string) error {
	for _, prefix := range []string{switchPrefix, leafSpinePrefix} {
		if strings.HasPrefix(kind, prefix) {
			if n := countAfter(kind, prefix); n < 2 || n > MaxHosts {
				return fmt.Errorf("topology %q: %sN holds 2 to %d hosts", kind, prefix, MaxHosts)
			}
			return nil
		}
	}
	if slices.Contains(Kinds, kind) {
		return nil
	}
	return fmt.Errorf("unknown topology %q", kind)
}

// switchName is the switch's bridge inside its namespace, and portName
// its port to host i.
const switchName = "sw0"

func portName(i int) string { return fmt.Sprintf("p%d", i) }

// buildSwitch makes n hosts whose NICs are ports of one bridge in a switch
// namespace, on one flat underlay, each routing every other host's
// endpoint subnets to that host's NIC: a rack of machines on a top-of-rack
// switch with static routes.
//
// Equivalent to:
//
//	ip -n sw link add sw0 type bridge; ip -n sw link set sw0 up
//	ip -n sw link add pI type veth peer name nic0 netns hI   (each host I)
//	ip -n sw link set pI master sw0; ip -n sw link set pI up
//	ip -n hI addr add 198.18.0.I/16 dev nic0; ip -n hI link set nic0 up
//	ip -n hI route add 198.19.J.0/24 via 198.18.0.J          (each other J)
func (t *Topology) buildSwitch(n int) error {
	sns, sh, err := t.NewNamespace("sw")
	if err != nil {
		return err
	}
	t.stub = sns
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: switchName, MTU: t.MTU()}}
	if err := sh.LinkAdd(br); err != nil {
		return fmt.Errorf("create switch %s in %q: %w", switchName, sns.Name, err)
	}
	if err := sh.LinkSetUp(br); err != nil {
		return fmt.Errorf("set switch %s up in %q: %w", switchName, sns.Name, err)
	}
	for i := 1; i <= n; i++ {
		h, err := t.newHost(i, HostAddr(i), netip.PrefixFrom(HostAddr(i), UnderlayBits).Masked(), netip.Addr{})
		if err != nil {
			return err
		}
		if err := t.wire(sh, sns, portName(i), h.NS, NICName); err != nil {
			return err
		}
		port, err := sh.LinkByName(portName(i))
		if err != nil {
			return fmt.Errorf("find %s in %q: %w", portName(i), sns.Name, err)
		}
		if err := sh.LinkSetMaster(port, br); err != nil {
			return fmt.Errorf("plug %s into %s in %q: %w", portName(i), switchName, sns.Name, err)
		}
		if err := sh.LinkSetUp(port); err != nil {
			return fmt.Errorf("set %s up in %q: %w", portName(i), sns.Name, err)
		}
		if err := t.configureNIC(h, NICName, netip.PrefixFrom(h.Addr, UnderlayBits)); err != nil {
			return err
		}
	}
	return t.RouteEndpoints(EndpointSubnets)
}

// hairpinPorts lets the switch send frames back out of the port they came
// in on, at each of its n ports, for VEPA.
//
// Equivalent to: ip -n SW link set pI type bridge_slave hairpin on
func hairpinPorts(h *netlink.Handle, sw *netns.NS, n int) error {
	for i := 1; i <= n; i++ {
		port, err := h.LinkByName(portName(i))
		if err != nil {
			return fmt.Errorf("find %s in %q: %w", portName(i), sw.Name, err)
		}
		if err := h.LinkSetHairpin(port, true); err != nil {
			return fmt.Errorf("hairpin on %s in %q: %w", portName(i), sw.Name, err)
		}
	}
	return nil
}
