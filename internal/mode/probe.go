package mode

import (
	"errors"
	"fmt"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// Kernel support is probed by building the thing in a scratch namespace,
// the only test that does not lie: module lists and config files miss
// built-ins and autoloading.
var (
	probeMu    sync.Mutex
	probeCache = map[string]error{}
)

// Probe runs fn once per key in a scratch namespace holding a veth pair
// whose end "p0" is up, and caches the verdict.
func Probe(key string, fn func(ns *netns.NS, h *netlink.Handle, parent netlink.Link) error) error {
	probeMu.Lock()
	defer probeMu.Unlock()
	if err, done := probeCache[key]; done {
		return err
	}
	err := runProbe(fn)
	probeCache[key] = err
	return err
}

func runProbe(fn func(ns *netns.NS, h *netlink.Handle, parent netlink.Link) error) (err error) {
	t, err := topo.Scratch(netns.NewToken())
	if err != nil {
		return fmt.Errorf("probe kernel support: %w", err)
	}
	defer func() { err = errors.Join(err, t.Close()) }()
	ns, h, err := t.NewNamespace("probe")
	if err != nil {
		return fmt.Errorf("probe kernel support: %w", err)
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "p0"}, PeerName: "p1"}
	if err := h.LinkAdd(veth); err != nil {
		return fmt.Errorf("probe kernel support: create veth: %w", err)
	}
	parent, err := h.LinkByName("p0")
	if err != nil {
		return fmt.Errorf("probe kernel support: %w", err)
	}
	if err := h.LinkSetUp(parent); err != nil {
		return fmt.Errorf("probe kernel support: %w", err)
	}
	return fn(ns, h, parent)
}

// KernelLacks turns the errors the kernel gives for a missing feature into
// ErrUnsupported, and leaves other failures as they are.
func KernelLacks(what string, err error) error {
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.EPROTONOSUPPORT) {
		return Unsupported("the kernel cannot create %s (%v)", what, err)
	}
	return fmt.Errorf("probe %s: %w", what, err)
}
