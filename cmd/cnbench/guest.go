package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"cnbench/internal/agent/guest"
	"cnbench/internal/cleanup"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
	"cnbench/internal/vm"
)

func newGuestAgentCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "guest-agent",
		Short:  "Run as the init and agent of a cnbench guest VM (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return guest.Main()
		},
	}
}

// vmAccelerator says how guests run here, booting a probe guest under
// KVM the first time after the machine starts. The probe's objects carry
// a claimed token, so a concurrent cleanup leaves them alone.
func vmAccelerator() string {
	tok := netns.NewToken()
	if err := cleanup.Claim(tok); err != nil {
		return verdict(err)
	}
	acc, why := topo.Accelerator(tok)
	if err := errors.Join(topo.RemoveImages(tok), cleanup.Release(tok)); err != nil {
		return verdict(err)
	}
	if acc == vm.TCG {
		return fmt.Sprintf("%s: qemu's software emulation; numbers in VM topologies measure the emulator (%s)", acc, why)
	}
	return fmt.Sprintf("%s (%s)", acc, why)
}
