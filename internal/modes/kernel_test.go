package modes_test

import (
	"testing"

	"cnbench/internal/modes"
	"cnbench/internal/testutil"
)

// TestAvailableAsTheKernelSays holds every mode's verdict on this machine
// to the kernel's own account of what it has (its configuration, its
// modules) and the programs installed: a mode the machine has must not be
// reported unsupported, where it would be skipped unseen, and one it
// lacks must not be reported available.
func TestAvailableAsTheKernelSays(t *testing.T) {
	testutil.RequireRoot(t)
	for _, name := range modes.Names() {
		d, _ := modes.Lookup(name)
		want, why := testutil.ModeExpected(name)
		got := d.Available()
		switch {
		case want && got != nil:
			t.Errorf("%s: reported unsupported (%v), yet the machine has it: %s", name, got, why)
		case !want && got == nil:
			t.Errorf("%s: reported available, yet the machine lacks it: %s", name, why)
		default:
			t.Logf("%s: available %v, as expected: %s", name, got == nil, why)
		}
	}
}
