package kernel

import (
	"slices"

	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/topo"
)

// The guest kernel modules the kernel family's links need.
var (
	vethModules    = []string{"veth"}
	bridgeModules  = []string{"veth", "bridge"}
	macvlanModules = []string{"macvlan"}
	ipvlanModules  = []string{"ipvlan"}
	overlayModules = []string{"veth", "bridge", "vxlan"}
	// ESP with AES-GCM: the kernel instantiates seqiv(rfc4106(gcm(aes)))
	// from these templates, seqiv seeds its IVs from the default RNG
	// (drbg, whose first choice is HMAC-SHA512), and a guest has no
	// modprobe to load any of them on demand: without one, adding the
	// security association fails with ENOENT and nothing else.
	// aesni_intel and ghash_clmulni_intel are the CPU's instructions for
	// them, as a host would use; a guest whose CPU lacks those skips them
	// (package agent/guest).
	ipsecModules = append(slices.Clone(overlayModules),
		"esp4", "sha512_generic", "drbg", "seqiv", "ctr", "gcm", "ghash_generic", "aesni_intel", "ghash_clmulni_intel")
	wireguardModules = []string{"veth", "wireguard"}
)

// Rows are the kernel family's rows of the mode table.
var Rows = familyRows([]mode.Descriptor{
	{Name: Host, Summary: "native baseline: the engine runs in the host's own namespace",
		Available: mode.Always, New: newHostMode,
		Guests: mode.Guests{Build: true}, IPv6: true, Addresses: topo.HostAddresses, HostEndpoints: model.MaxEndpointsPerHost},
	{Name: Veth, Summary: "routed point-to-point veth pair, like the CNI ptp plugin",
		Available: mode.Always, New: newVethMode,
		Guests: mode.Guests{Build: true, Modules: vethModules}, IPv6: true, Addresses: topo.SubnetAddresses, HostEndpoints: model.MaxEndpointsPerHost},
	{Name: EBPF, Summary: "routed veth pairs with an eBPF datapath: tc programs hand packets to the peer endpoint (bpf_redirect_peer) or the NIC (bpf_redirect_neigh), like Cilium's BPF host routing",
		Available: ebpfAvailable, New: newEBPFMode,
		Guests: mode.Guests{Why: "the guest's agent does not load BPF programs"}, IPv6: true, Addresses: topo.SubnetAddresses, HostEndpoints: model.MaxEndpointsPerHost},
	{Name: Bridge, Summary: "veth pair into a Linux bridge on the host, like docker0",
		Available: mode.Always, New: newBridgeMode,
		Guests: mode.Guests{Build: true, Modules: bridgeModules}, Uncounted: []string{"bridge"}, IPv6: true, Addresses: topo.SubnetAddresses,
		HostEndpoints: BridgePorts},
	{Name: OVS, Summary: "veth pair into an Open vSwitch bridge on the host, run by cnbench's own daemons",
		Available: ovsAvailable, Record: ovsRecord, New: newOVSMode,
		Guests:    mode.Guests{Why: "Open vSwitch's daemons (ovsdb-server, ovs-vswitchd) and their libraries are not carried in the guest image"},
		Uncounted: []string{"openvswitch"}, IPv6: true, Addresses: topo.SubnetAddresses, HostEndpoints: model.MaxEndpointsPerHost},
	macvlanRow(Macvlan, "macvlan in bridge mode on the host's NIC"),
	macvlanRow(MacvlanPrivate, "macvlan in private mode: endpoints on one NIC cannot talk"),
	macvlanRow(MacvlanVEPA, "macvlan in VEPA mode: frames between endpoints hairpin at the switch"),
	macvlanRow(MacvlanPassthru, "macvlan in passthru mode: one endpoint takes the NIC"),
	ipvlanRow(IPVlan, "ipvlan in l2 mode on the host's NIC, sharing its MAC", topo.WireAddresses),
	ipvlanRow(IPVlanL3, "ipvlan in l3 mode: the host routes for the endpoints, no ARP", topo.SubnetAddresses),
	ipvlanRow(IPVlanL3S, "ipvlan in l3s mode: l3 through the host's netfilter hooks", topo.SubnetAddresses),
	{Name: NAT, Summary: "bridge with masquerade; clients reach a DNAT'ed port on the server host's address, like docker run -p",
		Available: natAvailable, New: newNATMode,
		Guests:    mode.Guests{Why: "the guest image carries no nftables modules for the port mapping"},
		Uncounted: []string{"bridge"}, IPv6: true, Addresses: topo.SubnetAddresses, HostEndpoints: BridgePorts},
	{Name: Overlay, Summary: "VXLAN between hosts: a bridge per host with a VTEP on its NIC, like Docker overlay and flannel",
		Available: overlayAvailable, New: newOverlayMode,
		Guests:    mode.Guests{Build: true, Modules: overlayModules},
		Uncounted: []string{"bridge", "vxlan"}, IPv6: true, Addresses: topo.OverlayAddresses},
	{Name: OverlayIPsec, Summary: "overlay whose VXLAN traffic between hosts IPsec ESP encrypts (AES-GCM, transport mode), like Docker Swarm's encrypted overlay",
		Available: ipsecAvailable, Supports: betweenHosts(OverlayIPsec), New: newIPsecOverlayMode,
		Guests:    mode.Guests{Build: true, Modules: ipsecModules},
		Uncounted: []string{"bridge", "vxlan"}, Addresses: topo.OverlayAddresses},
	{Name: WireGuard, Summary: "routed veth pairs whose traffic between hosts crosses a WireGuard tunnel, like Calico's and Cilium's WireGuard encryption",
		Available: wireguardAvailable, Supports: betweenHosts(WireGuard), New: newWireGuardMode,
		Guests:    mode.Guests{Build: true, Modules: wireguardModules},
		Uncounted: []string{"wireguard"}, Addresses: topo.SubnetAddresses},
})

// betweenHosts rules out chc and cvc for a mode that encrypts only what
// travels between hosts: both endpoints are on one host (or guest), so
// nothing of theirs would be encrypted.
func betweenHosts(name string) func(topology string) error {
	return func(topology string) error {
		if topo.SharesHost(topology) {
			return mode.NotApplicable("%s encrypts traffic between hosts, and %s keeps both endpoints on one host", name, topology)
		}
		return nil
	}
}

// alone is why a mode that encrypts between hosts places no endpoint on
// host h of t: t has no other host, whatever its kind (betweenHosts
// rules out by kind only the topologies that never have one).
func alone(name string, t *topo.Topology, h *topo.Host) error {
	if len(t.Others(h)) > 0 {
		return nil
	}
	return mode.NotApplicable("%s encrypts traffic between hosts, and %s has no host but %s", name, t.Kind, h.Name)
}

func macvlanRow(name, summary string) mode.Descriptor {
	return mode.Descriptor{Name: name, Summary: summary,
		Available: func() error { return LinkAvailable(name) }, Supports: macvlanSupports(name), New: newMacvlanMode(name),
		Guests:    mode.Guests{Build: true, Modules: macvlanModules, Supports: macvlanGuestSupports(name)},
		Addresses: topo.WireAddresses, HostEndpoints: MacvlanEndpoints, IPv6: true}
}

func ipvlanRow(name, summary string, addrs topo.Addressing) mode.Descriptor {
	return mode.Descriptor{Name: name, Summary: summary,
		Available: func() error { return LinkAvailable(name) }, New: newIPVlanMode(name),
		Guests: mode.Guests{Build: true, Modules: ipvlanModules}, Addresses: addrs, IPv6: true}
}
