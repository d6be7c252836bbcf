package mode

import (
	"fmt"
	"strings"

	"cnbench/internal/topo"
)

// checkVM is Check for a topology with VM hosts: the machine must boot
// guests, the mode must be one guests build, and where an endpoint sits
// on an emulated host the host's kernel must build the mode too. The
// guest's kernel has what guests build, so a mode this machine's kernel
// lacks still works in cvc and vv.
func (d Descriptor) checkVM(topology string) error {
	if err := topo.VMAvailable(); err != nil {
		return Unsupported("%s needs VMs: %v", topology, err)
	}
	if !d.Guests.Build {
		why := d.Guests.Why
		if why == "" {
			why = "guests build only " + strings.Join(d.guestModes, ", ")
		}
		return Unsupported("%s inside a VM: %s", d.Name, why)
	}
	if topo.HasHostEndpoint(topology) {
		if err := d.Available(); err != nil {
			return err
		}
	}
	if d.Guests.Supports != nil {
		if err := d.Guests.Supports(topology); err != nil {
			return err
		}
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
