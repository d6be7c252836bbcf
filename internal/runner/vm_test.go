package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cnbench/internal/model"
	"cnbench/internal/topo"
	"cnbench/internal/vm"
)

// TestContainersInVMs boots real guests (under TCG where KVM does not
// work) and measures tcp_rr with ipvlan inside one VM (cvc: the guest's
// kernel builds it, whatever this machine's lacks) and with bridge from a
// host's container to a container in a VM (chvc). Nothing may be left
// behind: no qemu, no namespace, no image.
func TestContainersInVMs(t *testing.T) {
	if err := topo.VMAvailable(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	r, st := newTestRunner(t)
	var cases []model.CaseResult
	for _, mt := range [][2]string{{"ipvlan", topo.CVC}, {"bridge", topo.CHVC}} {
		res := runDoc(t, r, st, "vm.yaml", `
name: vm
duration: 500ms
warmup: 0s
samples: 1
modes: [`+mt[0]+`]
topologies: [`+mt[1]+`]
workloads: [tcp_rr]
`)
		cases = append(cases, res.Cases...)
	}
	if len(cases) != 2 {
		t.Fatalf("%d cases, want 2", len(cases))
	}
	for _, c := range cases {
		if c.Status != model.StatusOK {
			t.Errorf("%s: %s %s", c.Key, c.Status, c.Reason)
			continue
		}
		if c.Params.Accel != vm.KVM && c.Params.Accel != vm.TCG {
			t.Errorf("%s: accelerator %q recorded, want kvm or tcg", c.Key, c.Params.Accel)
		}
		v := c.Samples[0].Values
		t.Logf("%s (%s): %.0f tx/s, p50 %.0f us, sender CPU %.0f%%, receiver CPU %.0f%%", c.Key, c.Params.Accel,
			v[model.TransactionsPerS], v[model.LatencyP50US], v[model.CPUSenderPct], v[model.CPUReceiverPct])
		if v[model.TransactionsPerS] < 50 {
			t.Errorf("%s: %.0f transactions/s, implausibly few", c.Key, v[model.TransactionsPerS])
		}
		// The guest's own account of its engine's CPU time, in the guest:
		// a request/response loop keeps it busy.
		if v[model.CPUReceiverPct] <= 0 {
			t.Errorf("%s: receiver CPU %.1f%%: the guest accounted no CPU time", c.Key, v[model.CPUReceiverPct])
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), r.Token().Name("*")))
	if len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	out, _ := exec.Command("pgrep", "-af", "qemu-system").Output()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, r.Token().Name("")) {
			t.Errorf("qemu left running: %s", line)
		}
	}
}
