package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"cnbench/internal/cleanup"
	"cnbench/internal/mode/kernel"
	"cnbench/internal/model"
	"cnbench/internal/modes"
	"cnbench/internal/netns"
	"cnbench/internal/pinning"
	"cnbench/internal/report"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
)

// TestEveryModeInEveryTopology runs every mode in chc, chhc (with host
// controls set) and routed with one short sample each: each case must be
// measured, or skipped where the kernel or the installed programs say the
// machine lacks the mode, or with the mode's reason where it cannot work
// in the topology by its nature; the JSON report must carry the
// settings; nothing of the run may be left.
func TestEveryModeInEveryTopology(t *testing.T) {
	r, st := newTestRunner(t)
	res := runDoc(t, r, st, "modes.yaml", `
name: modes
duration: 200ms
warmup: 0s
samples: 1
modes: [`+strings.Join(modes.Names(), ", ")+`]
topologies:
  - chc
  - {name: chhc, mtu: 9000, gro: off, gso: off, tso: off, tx_checksum: off}
  - routed
workloads: [tcp_stream]
placement: same_node
`)
	if want := len(modes.Names()) * 3; len(res.Cases) != want {
		t.Fatalf("%d cases, want %d", len(res.Cases), want)
	}
	measured := 0
	for _, c := range res.Cases {
		// Whether the machine has the mode is the kernel's word and the
		// installed programs', not the mode's own; whether it works in
		// the topology at all is the mode's nature.
		has, why := testutil.ModeExpected(c.Mode)
		var notApplicable error
		if d, _ := modes.Lookup(c.Mode); d.Supports != nil {
			notApplicable = d.Supports(c.Topology)
		}
		switch {
		case !has && c.Status != model.StatusSkipped:
			t.Errorf("%s: %s, want skipped: %s", c.Key, c.Status, why)
		case !has:
			t.Logf("%s: skipped because %s (%s)", c.Key, c.Reason, why)
		case notApplicable != nil && (c.Status != model.StatusSkipped || c.Reason != notApplicable.Error()):
			t.Errorf("%s: %s %q, want skipped because %q", c.Key, c.Status, c.Reason, notApplicable)
		case notApplicable != nil:
		case c.Status != model.StatusOK:
			t.Errorf("%s: %s %s, yet the machine has it: %s", c.Key, c.Status, c.Reason, why)
		default:
			measured++
			bps := c.Samples[0].Values[model.ThroughputBPS]
			t.Logf("%-60s %8.0f Mbit/s", c.Key, bps/1e6)
			if bps < 1e6 {
				t.Errorf("%s: throughput %.0f bit/s", c.Key, bps)
			}
		}
	}
	if measured == 0 {
		t.Fatal("no case was measured")
	}

	var buf bytes.Buffer
	if err := report.Write(&buf, report.Build(res), "json"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Mode, Topology string
			Params         map[string]any
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Cases {
		p := c.Params
		if p["placement"] != pinning.SameNode || p["sender_cpus"] == nil || p["receiver_cpus"] == nil {
			t.Errorf("%s/%s: placement not in the JSON params: %v", c.Mode, c.Topology, p)
		}
		if c.Topology == topo.CHHC && (p["gro"] != "off" || p["tso"] != "off" || p["tx_checksum"] != "off" || p["mtu"] != 9000.0) {
			t.Errorf("%s/%s: host controls not in the JSON params: %v", c.Mode, c.Topology, p)
		}
		if d, _ := modes.Lookup(kernel.OVS); c.Mode == kernel.OVS && d.Available() == nil {
			if dp := p["datapath"]; dp != kernel.DatapathKernel && dp != kernel.DatapathUserspace {
				t.Errorf("ovs/%s: datapath %v in the JSON params", c.Topology, dp)
			}
		}
	}
	requireNothingLeft(t, r.Token())
}

// requireNothingLeft checks that no namespace, daemon record or process
// of the run's token is left.
func requireNothingLeft(t *testing.T, tok netns.Token) {
	t.Helper()
	if d, _ := cleanup.Daemons(tok); len(d) > 0 {
		t.Errorf("daemon records left: %+v", d)
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		cmdline, err := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if err == nil && bytes.Contains(cmdline, []byte(tok.Name(""))) {
			t.Errorf("process %s left: %s", p.Name(), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
	left, _ := netns.List()
	for _, n := range left {
		if netns.TokenOf(n) == tok {
			t.Errorf("namespace %s left", n)
		}
	}
}

// TestPlacementPinsAndSkips runs one case per placement: same_core must
// pin both engines to one CPU, and what the machine cannot give must be
// skipped with the reason.
func TestPlacementPinsAndSkips(t *testing.T) {
	r, st := newTestRunner(t)
	m, err := pinning.ReadMachine()
	if err != nil {
		t.Fatal(err)
	}
	res := runDoc(t, r, st, "pin.yaml", `
name: pin
duration: 100ms
warmup: 0s
samples: 1
modes: bridge
topologies: chc
workloads: tcp_rr
placement: [same_core, different_cores, different_nodes]
`)
	for _, c := range res.Cases {
		_, _, want := pinning.Resolve(c.Params.Placement, m)
		t.Logf("%s: %s %s sender %s receiver %s", c.Params.Placement, c.Status, c.Reason, c.Params.SenderCPUs, c.Params.ReceiverCPUs)
		if want != nil {
			if c.Status != model.StatusSkipped || !strings.Contains(c.Reason, want.Error()) {
				t.Errorf("%s: %s %q, want skipped because %v", c.Params.Placement, c.Status, c.Reason, want)
			}
			continue
		}
		if c.Status != model.StatusOK {
			t.Errorf("%s: %s %s", c.Params.Placement, c.Status, c.Reason)
		}
	}
	if res.Cases[0].Params.SenderCPUs == "" || res.Cases[0].Params.SenderCPUs != res.Cases[0].Params.ReceiverCPUs {
		t.Errorf("same_core recorded sender %q receiver %q", res.Cases[0].Params.SenderCPUs, res.Cases[0].Params.ReceiverCPUs)
	}
}
