// Package netstat reads the kernel's own account of a namespace's
// traffic: the counters of its links and its UDP counters. They owe
// nothing to the engine that made the traffic, so they are what an
// engine's figures are checked against. One reader serves every place an
// endpoint can live: this machine, an agent's machine and a VM guest,
// which send Link values as they are.
package netstat

import (
	"fmt"

	"github.com/vishvananda/netlink"

	"cnbench/internal/netns"
)

// Link is one link of a namespace with its counters; agents and guests
// send it as JSON.
type Link struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	Enslaved  bool   `json:"enslaved,omitempty"`
	RxBytes   uint64 `json:"rx_bytes"`
	RxPackets uint64 `json:"rx_packets"`
	RxDropped uint64 `json:"rx_dropped"`
	TxBytes   uint64 `json:"tx_bytes"`
	TxPackets uint64 `json:"tx_packets"`
}

// ReadLinks reads the counters of every link of ns, or of the caller's
// own namespace when ns is nil. Links without statistics are left out.
//
// Equivalent to: ip -n NS -s link
func ReadLinks(ns *netns.NS) ([]Link, error) {
	var (
		h     *netlink.Handle
		err   error
		where = nameOf(ns)
	)
	if ns == nil {
		h, err = netlink.NewHandle()
	} else {
		h, err = netlink.NewHandleAt(ns.Handle())
	}
	if err != nil {
		return nil, fmt.Errorf("read counters in %s: %w", where, err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return nil, fmt.Errorf("read counters in %s: %w", where, err)
	}
	var out []Link
	for _, l := range links {
		st := l.Attrs().Statistics
		if st == nil {
			continue
		}
		out = append(out, Link{
			Name: l.Attrs().Name, Type: l.Type(), Enslaved: l.Attrs().MasterIndex != 0,
			RxBytes: st.RxBytes, RxPackets: st.RxPackets, RxDropped: st.RxDropped,
			TxBytes: st.TxBytes, TxPackets: st.TxPackets,
		})
	}
	return out, nil
}

// Counters are link counters summed over the links that carry an
// endpoint's traffic.
type Counters struct {
	RxBytes, RxPackets, RxDropped uint64
	TxBytes, TxPackets            uint64
}

// Add returns c plus d.
func (c Counters) Add(d Counters) Counters {
	return Counters{c.RxBytes + d.RxBytes, c.RxPackets + d.RxPackets, c.RxDropped + d.RxDropped, c.TxBytes + d.TxBytes, c.TxPackets + d.TxPackets}
}

// Sub returns c less d, the traffic between two readings.
func (c Counters) Sub(d Counters) Counters {
	return Counters{c.RxBytes - d.RxBytes, c.RxPackets - d.RxPackets, c.RxDropped - d.RxDropped, c.TxBytes - d.TxBytes, c.TxPackets - d.TxPackets}
}

// Sum adds up the links that counted says carry traffic once. Links a
// frame crosses twice within one namespace, a bridge and its ports,
// would count it twice.
func Sum(links []Link, counted func(Link) bool) Counters {
	var c Counters
	for _, l := range links {
		if counted(l) {
			c = c.Add(Counters{l.RxBytes, l.RxPackets, l.RxDropped, l.TxBytes, l.TxPackets})
		}
	}
	return c
}

// nameOf names a namespace in messages; nil is the caller's own.
func nameOf(ns *netns.NS) string {
	if ns == nil {
		return "this namespace"
	}
	return ns.Name
}
