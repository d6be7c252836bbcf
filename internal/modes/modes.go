// Package modes is the mode table: every network mode cnbench knows, one
// row each, put together from the families' rows (package mode says what
// a row holds). Everything that asks about modes asks here: lookup and
// the lists of names, which modes guests build and the kernel modules
// they need, which links are not traffic.
//
// Adding a mode is one file in its family's package and one row in the
// family's Rows.
package modes

import (
	"slices"

	"cnbench/internal/mode"
	"cnbench/internal/mode/cluster"
	"cnbench/internal/mode/cni"
	"cnbench/internal/mode/docker"
	"cnbench/internal/mode/kernel"
	"cnbench/internal/topo"
	"cnbench/internal/vm"
)

// Table is the one mode table.
var Table = mode.Table{
	Rows:     slices.Concat(kernel.Rows, docker.Rows, cni.Rows(), cluster.Rows),
	Patterns: []mode.Pattern{cni.Pattern},
}

// Guests carry the kernel modules of the modes they build. Package vm
// sits below the modes and cannot import their table, so the table hands
// it over.
func init() { vm.ModeModules = func() []string { return Table.GuestModules() } }

// Lookup returns the row of a mode by name; a cni: mode's is made from
// the configuration it names.
func Lookup(name string) (mode.Descriptor, bool) { return Table.Lookup(name) }

// Names lists the table's modes, host first, then alphabetically.
func Names() []string { return Table.Names() }

// EndpointsPerHost is how many endpoints the named mode places on one
// host of a topology; a name the table does not hold gets the bound of
// a host's first subnet.
func EndpointsPerHost(name, topology string) int {
	if d, ok := Table.Lookup(name); ok {
		return d.EndpointsPerHost(topology)
	}
	return topo.BaseEndpointsPerHost
}

// Patterns are the mode names scenarios may use beyond Names: an entry
// ending in "*" admits every name with its prefix.
func Patterns() []string { return Table.PatternNames() }

// GuestModes are the modes built inside VM hosts, by the guest's agent.
func GuestModes() []string { return Table.GuestModes() }

// Uncounted reports whether a link of the kind (as netlink names it) is
// one whose counters are not traffic of their own: a bridge or VTEP some
// mode creates.
func Uncounted(kind string) bool { return Table.Uncounted(kind) }
