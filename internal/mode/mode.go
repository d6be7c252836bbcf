// Package mode connects endpoints to their hosts. Each network mode lives
// in a file of its own behind the small Mode interface and registers itself
// in registry.go; adding a mode means adding that file, its test and one
// registry line.
package mode

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"

	"cnbench/internal/topo"
)

// Mode builds endpoints of one kind within one topology. A Mode value is
// made per topology and may keep per-host state, such as a bridge it has
// already created; everything it creates lives in the topology's
// namespaces or is registered with Topology.OnClose, so closing the
// topology removes it.
type Mode interface {
	// Endpoint places a new endpoint on host h and connects it. name is
	// unique within the topology and short (it becomes part of a
	// namespace name).
	Endpoint(h *topo.Host, name string) (*topo.Endpoint, error)
	// Expose makes port on server endpoint ep reachable to clients and
	// returns the address they dial.
	Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error)
}

// Descriptor describes a mode to the registry.
type Descriptor struct {
	Name    string
	Summary string
	// Available returns nil if this machine can build the mode, or an
	// error wrapping ErrUnsupported that says why not.
	Available func() error
	New       func(t *topo.Topology) Mode
}

// ErrUnsupported marks a mode, or a part of one, that this machine cannot
// build; cases that need it are skipped, not failed.
var ErrUnsupported = errors.New("unsupported on this machine")

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

var registry = map[string]Descriptor{}

func register(d Descriptor) {
	if _, dup := registry[d.Name]; dup {
		panic("mode registered twice: " + d.Name)
	}
	registry[d.Name] = d
}

// Lookup returns the descriptor of a mode by name.
func Lookup(name string) (Descriptor, bool) {
	d, ok := registry[name]
	return d, ok
}

// Names lists the registered modes, host first, then alphabetically.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == Host) != (names[j] == Host) {
			return names[i] == Host
		}
		return names[i] < names[j]
	})
	return names
}

func always() error { return nil }
