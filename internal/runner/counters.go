package runner

import (
	"fmt"

	"github.com/vishvananda/netlink"

	"cnbench/internal/modes"
)

// linkCounters are the kernel's own interface counters of a namespace,
// summed over its links: an account of the traffic that owes nothing to
// the engine.
type linkCounters struct {
	rxBytes, rxPackets, rxDropped uint64
	txBytes, txPackets            uint64
}

func (c linkCounters) sub(d linkCounters) linkCounters {
	return linkCounters{c.rxBytes - d.rxBytes, c.rxPackets - d.rxPackets, c.rxDropped - d.rxDropped, c.txBytes - d.txBytes, c.txPackets - d.txPackets}
}

// counters reads the slot's namespace's interface counters. The engine's
// traffic is the only traffic there: the namespace is cnbench's own.
//
// Equivalent to: ip -n NS -s link
func (s *slot) counters() (linkCounters, error) {
	if s.guest != nil {
		return s.guest.counters()
	}
	h, err := netlink.NewHandleAt(s.ep.NS.Handle())
	if err != nil {
		return linkCounters{}, fmt.Errorf("read counters in %s: %w", s.ep.NS.Name, err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return linkCounters{}, fmt.Errorf("read counters in %s: %w", s.ep.NS.Name, err)
	}
	var c linkCounters
	for _, l := range links {
		st := l.Attrs().Statistics
		if st == nil || !countsTraffic(l) {
			continue
		}
		c.rxBytes += st.RxBytes
		c.rxPackets += st.RxPackets
		c.rxDropped += st.RxDropped
		c.txBytes += st.TxBytes
		c.txPackets += st.TxPackets
	}
	return c, nil
}

// countsTraffic says whether a link's counters belong in the sum. Links a
// frame crosses twice within the namespace, bridges and their ports, would
// count it twice; endpoints hold no such links, and in a host's own
// namespace (the native baseline) the traffic is on lo or the NIC.
func countsTraffic(l netlink.Link) bool {
	return countsLinkKind(l.Type(), l.Attrs().MasterIndex != 0)
}

// countsLinkKind is countsTraffic for a link known by its type and
// whether it is enslaved, as an agent reports it.
func countsLinkKind(typ string, enslaved bool) bool {
	return !modes.Uncounted(typ) && !enslaved
}
