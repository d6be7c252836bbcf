package topo

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
)

// switchPrefix names the topologies of N hosts on one switch: "switch:N".
const switchPrefix = "switch:"

// SwitchWord is how a scenario's vocabulary lists the switch topologies.
const SwitchWord = switchPrefix + "*"

// SwitchName is how help and doctor name the switch topologies.
const SwitchName = switchPrefix + "N"

// Shown are the topologies as help and doctor list them, with the name
// each is checked by: switch:N by switch:2.
func Shown() (names, checked []string) {
	names = append(slices.Clone(Kinds), SwitchName)
	checked = append(slices.Clone(Kinds), Switch(2))
	return names, checked
}

// Switch is the topology of n hosts on one switch.
func Switch(n int) string { return switchPrefix + strconv.Itoa(n) }

// SwitchHosts is how many hosts a switch topology joins; 0 when kind is
// not one (or its count is not a number).
func SwitchHosts(kind string) int {
	s, ok := strings.CutPrefix(kind, switchPrefix)
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
	if strings.HasPrefix(kind, switchPrefix) {
		if n := SwitchHosts(kind); n < 2 || n > MaxHosts {
			return fmt.Errorf("topology %q: a switch joins 2 to %d hosts, as switch:N", kind, MaxHosts)
		}
		return nil
	}
	for _, k := range Kinds {
		if k == kind {
			return nil
		}
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
