package kernel

import (
	"fmt"

	"github.com/vishvananda/netlink"

	"cnbench/internal/mode"
	"cnbench/internal/netns"
)

// LinkAvailable reports whether the kernel can create a link of the
// named mode ("macvlan:private", "ipvlan:l3") on top of a veth.
//
// Equivalent to: ip link add x0 link p0 type macvlan mode MODE (or ipvlan)
// in a scratch namespace
func LinkAvailable(name string) error {
	return mode.Probe("link:"+name, func(_ *netns.NS, h *netlink.Handle, parent netlink.Link) error {
		attrs := netlink.LinkAttrs{Name: "x0", ParentIndex: parent.Attrs().Index}
		var link netlink.Link
		if m, ok := macvlanModes[name]; ok {
			link = &netlink.Macvlan{LinkAttrs: attrs, Mode: m}
		} else if m, ok := ipvlanModes[name]; ok {
			link = &netlink.IPVlan{LinkAttrs: attrs, Mode: m}
		} else {
			return fmt.Errorf("probe link %q: no probe for it", name)
		}
		if err := h.LinkAdd(link); err != nil {
			return mode.KernelLacks(name+" links", err)
		}
		return nil
	})
}
