package mode

func init() {
	register(Descriptor{Name: Host, Summary: "native baseline: the engine runs in the host's own namespace", Available: always, New: newHostMode})
	register(Descriptor{Name: Veth, Summary: "routed point-to-point veth pair, like the CNI ptp plugin", Available: always, New: newVethMode})
	register(Descriptor{Name: Bridge, Summary: "veth pair into a Linux bridge on the host, like docker0", Available: always, New: newBridgeMode})
	register(Descriptor{Name: Macvlan, Summary: "macvlan in bridge mode on the host's NIC", Available: macvlanAvailable, New: newMacvlanMode})
	register(Descriptor{Name: NAT, Summary: "bridge with masquerade; clients reach a DNAT'ed port on the server host's address, like docker run -p", Available: natAvailable, New: newNATMode})
}
