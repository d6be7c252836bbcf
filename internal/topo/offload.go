package topo

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"

	"cnbench/internal/netns"
)

// Offloads switches segmentation and checksum offloads. Each field is
// "on", "off", or empty to keep the kernel's default.
type Offloads struct {
	GRO, GSO, TSO, TxChecksum string
}

// IsZero reports whether no offload is set.
func (o Offloads) IsZero() bool { return o == Offloads{} }

// features maps each setting to the ethtool feature names it covers; a
// device has only some of them (veth has tx-checksum-ip-generic, a real
// NIC may have tx-checksum-ipv4 and -ipv6 instead).
func (o Offloads) features() (map[string]bool, error) {
	out := map[string]bool{}
	for _, s := range []struct {
		name, value string
		features    []string
	}{
		{"gro", o.GRO, []string{"rx-gro"}},
		{"gso", o.GSO, []string{"tx-generic-segmentation"}},
		{"tso", o.TSO, []string{"tx-tcp-segmentation", "tx-tcp-ecn-segmentation", "tx-tcp-mangleid-segmentation", "tx-tcp6-segmentation"}},
		{"tx_checksum", o.TxChecksum, []string{"tx-checksum-ip-generic", "tx-checksum-ipv4", "tx-checksum-ipv6"}},
	} {
		switch s.value {
		case "":
			continue
		case "on", "off":
		default:
			return nil, fmt.Errorf("offload %s: expected on or off, got %q", s.name, s.value)
		}
		for _, f := range s.features {
			out[f] = s.value == "on"
		}
	}
	return out, nil
}

// SetOffloads switches the offloads of the named links in namespace ns.
// The kernel may refuse a combination (TSO needs tx checksumming), so the
// result is read back and a setting that did not take is an error.
//
// Equivalent to: ip netns exec NS ethtool -K LINK gro off gso off tso off tx off
func SetOffloads(ns *netns.NS, o Offloads, links ...string) error {
	want, err := o.features()
	if err != nil || len(want) == 0 || len(links) == 0 {
		return err
	}
	// The ethtool socket belongs to the namespace it is opened in.
	return ns.Do(func() error {
		e, err := ethtool.NewEthtool()
		if err != nil {
			return fmt.Errorf("ethtool in %q: %w", ns.Name, err)
		}
		defer e.Close()
		var errs []error
		for _, link := range links {
			errs = append(errs, setFeatures(e, link, want))
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("offloads in %q: %w", ns.Name, err)
		}
		return nil
	})
}

func setFeatures(e *ethtool.Ethtool, link string, want map[string]bool) error {
	states, err := e.FeaturesWithState(link)
	if err != nil {
		return fmt.Errorf("features of %s: %w", link, err)
	}
	// A device lists features it can never change (veth's
	// tx-checksum-ipv4); only the changeable ones are its switches.
	change := map[string]bool{}
	for f, on := range want {
		if st, ok := states[f]; ok && st.Available && !st.NeverChanged {
			change[f] = on
		}
	}
	if err := e.Change(link, change); err != nil {
		return fmt.Errorf("ethtool -K %s: %w", link, err)
	}
	got, err := e.Features(link)
	if err != nil {
		return fmt.Errorf("features of %s: %w", link, err)
	}
	var refused []string
	for f, on := range change {
		if got[f] != on {
			refused = append(refused, fmt.Sprintf("%s stays %s", f, onOff(got[f])))
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return fmt.Errorf("%s refused: %s (tso on needs tx_checksum on)", link, strings.Join(refused, ", "))
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// ApplyOffloads sets the topology's offload options on every veth in its
// namespaces: the emulated NICs, the router's ports and the endpoints'
// pairs. The runner calls it once the endpoints are placed.
func (t *Topology) ApplyOffloads() error {
	if t.Opts.Offloads.IsZero() {
		return nil
	}
	t.mu.Lock()
	namespaces := append([]*netns.NS(nil), t.namespaces...)
	handles := append([]*netlink.Handle(nil), t.handles...)
	t.mu.Unlock()
	for i, ns := range namespaces {
		links, err := handles[i].LinkList()
		if err != nil {
			return fmt.Errorf("list links in %q: %w", ns.Name, err)
		}
		var veths []string
		for _, l := range links {
			if l.Type() == "veth" {
				veths = append(veths, l.Attrs().Name)
			}
		}
		if err := SetOffloads(ns, t.Opts.Offloads, veths...); err != nil {
			return err
		}
	}
	return nil
}

// EnableReflectiveRelay makes the switch a host's NIC is plugged into
// send frames back out of the port they came in on, as an 802.1Qbg switch
// does for VEPA. chc's stub becomes such a switch, and switch:N's switch
// turns hairpin on at every port; elsewhere a NIC is cabled to another
// host or the router, which route rather than switch.
//
// Equivalent to: ip -n W link add sw0 type bridge; ip -n W link set nic0
// master sw0; ip -n W link set nic0 type bridge_slave hairpin on
func (t *Topology) EnableReflectiveRelay() error {
	if t.stub == nil {
		return nil
	}
	h, err := netlink.NewHandleAt(t.stub.Handle())
	if err != nil {
		return fmt.Errorf("netlink handle in %q: %w", t.stub.Name, err)
	}
	defer h.Close()
	if n := SwitchHosts(t.Kind); n > 0 {
		return hairpinPorts(h, t.stub, n)
	}
	if _, err := h.LinkByName("sw0"); err == nil {
		return nil
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "sw0", MTU: t.MTU()}}
	if err := h.LinkAdd(br); err != nil {
		return fmt.Errorf("create switch sw0 in %q: %w", t.stub.Name, err)
	}
	port, err := h.LinkByName(NICName)
	if err != nil {
		return fmt.Errorf("find %s in %q: %w", NICName, t.stub.Name, err)
	}
	if err := h.LinkSetMaster(port, br); err != nil {
		return fmt.Errorf("attach %s to sw0 in %q: %w", NICName, t.stub.Name, err)
	}
	if err := h.LinkSetHairpin(port, true); err != nil {
		return fmt.Errorf("hairpin on %s in %q: %w", NICName, t.stub.Name, err)
	}
	if err := h.LinkSetUp(br); err != nil {
		return fmt.Errorf("set sw0 up in %q: %w", t.stub.Name, err)
	}
	return nil
}
