package main

import (
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cnbench/internal/mode"
	"cnbench/internal/modes"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
)

// exampleMode is a whole mode: its endpoints are the host itself, as the
// native baseline's are.
type exampleMode struct{}

var _ mode.Mode = exampleMode{}

func (exampleMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	return &topo.Endpoint{Name: name, Host: h, NS: h.NS, Addr: h.Addr}, nil
}

func (exampleMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	return netip.AddrPortFrom(ep.Addr, uint16(port)), nil
}

// exampleReason is why the example mode rules out every topology but chc.
const exampleReason = "the example mode keeps its endpoints on one host"

// exampleRow is the example mode's one row of the table.
var exampleRow = mode.Descriptor{
	Name: "example", Summary: "a mode added by one row", Family: mode.Kernel,
	Available: mode.Always,
	Supports: func(topology string) error {
		if topology != topo.CHC {
			return mode.NotApplicable("%s", exampleReason)
		}
		return nil
	},
	New:       func(*topo.Topology) mode.Mode { return exampleMode{} },
	Uncounted: []string{"example0"},
	Addresses: topo.HostAddresses,
}

// TestAddingAModeIsOneRow adds a mode by its row alone, and finds it in
// every place that asks about modes: lookup, the vocabulary scenarios are
// checked against, doctor's listing, the runner's check of a case, and
// the links whose counters are not traffic.
func TestAddingAModeIsOneRow(t *testing.T) {
	testutil.RequireRoot(t)
	saved := modes.Table.Rows
	modes.Table.Rows = append(slices.Clip(saved), exampleRow)
	t.Cleanup(func() { modes.Table.Rows = saved })

	if d, ok := modes.Lookup("example"); !ok || d.Summary != exampleRow.Summary {
		t.Fatalf("lookup: %v, %v", d.Name, ok)
	}
	if !slices.Contains(vocabulary().Modes, "example") {
		t.Errorf("scenarios may not name the example mode: %v", vocabulary().Modes)
	}
	if !modes.Uncounted("example0") {
		t.Error("the example mode's link kind is counted as traffic")
	}
	code, out, stderr := runCLI(t, "doctor")
	if code != 0 || !strings.Contains(out, "mode example") || !strings.Contains(out, exampleRow.Summary) {
		t.Errorf("doctor (exit %d) does not list the example mode:\n%s%s", code, out, stderr)
	}
	db := filepath.Join(t.TempDir(), "r.db")
	code, out, stderr = runCLI(t, "run", "--modes", "example", "--topologies", "chhc", "--workloads", "tcp_rr", "--db", db, "--quiet")
	if code != 0 || !strings.Contains(out+stderr, exampleReason) {
		t.Errorf("run (exit %d) does not skip the example mode in chhc for its reason:\n%s%s", code, out, stderr)
	}
}
