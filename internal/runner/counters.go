package runner

import (
	"cnbench/internal/netstat"
)

// counters reads the slot's namespace's interface counters. The engine's
// traffic is the only traffic there: the namespace is cnbench's own.
func (s *slot) counters() (netstat.Counters, error) {
	if s.guest != nil {
		return s.guest.counters()
	}
	links, err := netstat.ReadLinks(s.ep.NS)
	return netstat.Sum(links, countsTraffic), err
}

// countsTraffic says whether a link's counters belong in the sum. Links a
// frame crosses twice within the namespace, bridges and their ports, would
// count it twice; endpoints hold no such links, and in a host's own
// namespace (the native baseline) the traffic is on lo or the NIC.
func countsTraffic(l netstat.Link) bool {
	return countsLinkKind(l.Type, l.Enslaved)
}

// countsLinkKind is countsTraffic for a link known by its type and
// whether it is enslaved.
func countsLinkKind(typ string, enslaved bool) bool {
	switch typ {
	case "bridge", "openvswitch", "vxlan":
		return false
	}
	return !enslaved
}
