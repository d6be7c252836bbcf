package mode

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"cnbench/internal/topo"
	"cnbench/internal/vm"
)

// GuestModes are the modes built inside VM hosts, by the guest's agent
// with this package's own code on the guest's kernel.
var GuestModes = []string{Host, Veth, Bridge, Macvlan, Macvlan + ":private", Macvlan + ":vepa", Macvlan + ":passthru", IPVlan, IPVlan + ":l3", IPVlan + ":l3s"}

// notInGuests says why a mode is not built inside guests.
var notInGuests = map[string]string{
	OVS:     "Open vSwitch's daemons (ovsdb-server, ovs-vswitchd) and their libraries are not carried in the guest image",
	NAT:     "the guest image carries no nftables modules for the port mapping",
	Overlay: "the guest image carries no VXLAN module",
}

// checkVM is Check for a topology with VM hosts: the machine must boot
// guests, the mode must be one guests build, and where an endpoint sits
// on an emulated host the host's kernel must build the mode too. The
// guest's kernel has what guests build, so a mode this machine's kernel
// lacks still works in cvc and vv.
func (d Descriptor) checkVM(topology string) error {
	if err := topo.VMAvailable(); err != nil {
		return unsupported("%s needs VMs: %v", topology, err)
	}
	if !slices.Contains(GuestModes, d.Name) {
		why, ok := notInGuests[d.Name]
		if !ok {
			why = "guests build only " + strings.Join(GuestModes, ", ")
		}
		return unsupported("%s inside a VM: %s", d.Name, why)
	}
	if topo.HasHostEndpoint(topology) {
		if err := d.Available(); err != nil {
			return err
		}
	}
	if topology == topo.CVC && d.Name == Macvlan+":vepa" {
		return notApplicable("%s: the guest's frames would have to hairpin at its host's bridge, which does not reflect them", d.Name)
	}
	if d.Supports == nil {
		return nil
	}
	// Two endpoints in one VM share its NIC, as two on one host do.
	bare := topo.CHHC
	if topology == topo.CVC {
		bare = topo.CHC
	}
	if err := d.Supports(bare); err != nil {
		return fmt.Errorf("%w (in %s as in %s)", err, topology, bare)
	}
	return nil
}

// InTopology is the mode as the runner uses it in topology t: in a VM
// topology, endpoints on VM hosts are built inside the guest by its
// agent, and those on emulated hosts here, as always.
func (d Descriptor) InTopology(t *topo.Topology) Mode {
	m := d.New(t)
	if !topo.IsVM(t.Kind) {
		return m
	}
	return &guestAware{local: m, name: d.Name}
}

type guestAware struct {
	local Mode
	name  string
}

var _ Mode = (*guestAware)(nil)

func (g *guestAware) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	if h.Guest == nil {
		return g.local.Endpoint(h, name)
	}
	addr, err := h.Guest.Endpoint(g.name, name)
	if errors.Is(err, vm.ErrGuestUnsupported) {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	if err != nil {
		return nil, err
	}
	// NS is the namespace qemu runs in: nothing of the endpoint is there,
	// but messages name it.
	return &topo.Endpoint{Name: name, Host: h, NS: h.NS, Addr: addr}, nil
}

func (g *guestAware) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	if ep.Host.Guest != nil {
		return direct(ep, port)
	}
	return g.local.Expose(ep, port)
}
