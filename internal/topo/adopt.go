package topo

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"

	"cnbench/internal/netns"
)

// Adopt records a namespace that something other than the topology made,
// such as a container's that netns.Attach named, so that host controls
// reach its links and Close removes its name like any other.
func (t *Topology) Adopt(ns *netns.NS) (*netlink.Handle, error) {
	h, err := netlink.NewHandleAt(ns.Handle())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("netlink handle in %q: %w", ns.Name, err), ns.Delete())
	}
	t.mu.Lock()
	t.namespaces = append(t.namespaces, ns)
	t.handles = append(t.handles, h)
	t.mu.Unlock()
	return h, nil
}
