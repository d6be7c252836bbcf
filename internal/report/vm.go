package report

import (
	"fmt"

	"cnbench/internal/model"
)

// accelWarnings warns when cases ran their VMs under TCG, qemu's
// software emulation: every instruction of the guest is translated, so
// such numbers measure the emulator more than the network mode, and are
// comparable only with other TCG numbers.
func accelWarnings(res *model.RunResult) []string {
	n := 0
	for _, c := range res.Cases {
		if c.Params.Accel == "tcg" && c.Status != model.StatusSkipped {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%d case(s) ran their VMs under TCG, qemu's software emulation (no usable KVM): their numbers measure the emulator, not the network; compare them only with other TCG numbers", n)}
}
