package mode

func init() {
	register(Descriptor{Name: Host, Summary: "native baseline: the engine runs in the host's own namespace", Available: always, New: newHostMode})
	register(Descriptor{Name: Veth, Summary: "routed point-to-point veth pair, like the CNI ptp plugin", Available: always, New: newVethMode})
	register(Descriptor{Name: Bridge, Summary: "veth pair into a Linux bridge on the host, like docker0", Available: always, New: newBridgeMode})
	register(Descriptor{Name: OVS, Summary: "veth pair into an Open vSwitch bridge on the host, run by cnbench's own daemons", Available: ovsAvailable, Record: ovsRecord, New: newOVSMode})
	for _, v := range []struct{ name, summary string }{
		{Macvlan, "macvlan in bridge mode on the host's NIC"},
		{Macvlan + ":private", "macvlan in private mode: endpoints on one NIC cannot talk"},
		{Macvlan + ":vepa", "macvlan in VEPA mode: frames between endpoints hairpin at the switch"},
		{Macvlan + ":passthru", "macvlan in passthru mode: one endpoint takes the NIC"},
	} {
		register(Descriptor{Name: v.name, Summary: v.summary, Available: macvlanAvailable(v.name), Supports: macvlanSupports(v.name), New: newMacvlanMode(v.name)})
	}
	for _, v := range []struct{ name, summary string }{
		{IPVlan, "ipvlan in l2 mode on the host's NIC, sharing its MAC"},
		{IPVlan + ":l3", "ipvlan in l3 mode: the host routes for the endpoints, no ARP"},
		{IPVlan + ":l3s", "ipvlan in l3s mode: l3 through the host's netfilter hooks"},
	} {
		register(Descriptor{Name: v.name, Summary: v.summary, Available: ipvlanAvailable(v.name), New: newIPVlanMode(v.name)})
	}
	register(Descriptor{Name: NAT, Summary: "bridge with masquerade; clients reach a DNAT'ed port on the server host's address, like docker run -p", Available: natAvailable, New: newNATMode})
	register(Descriptor{Name: Overlay, Summary: "VXLAN between hosts: a bridge per host with a VTEP on its NIC, like Docker overlay and flannel", Available: overlayAvailable, New: newOverlayMode})
}
