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

	"cnbench/internal/model"
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
	// Supports reports whether the mode can work in a topology at all,
	// on any machine, with an error wrapping ErrNotApplicable if not; nil
	// means in every topology.
	Supports func(topology string) error
	// Record fills in what the mode decides for itself, such as the OVS
	// datapath, so that it is stored with the case; nil if nothing.
	Record func(p *model.Params)
	New    func(t *topo.Topology) Mode
}

// Check reports whether a case of this mode in the topology can be built
// here: nil, or an error wrapping ErrUnsupported that says why not.
func (d Descriptor) Check(topology string) error {
	if topo.IsVM(topology) {
		return d.checkVM(topology)
	}
	if err := d.Available(); err != nil {
		return err
	}
	if d.Supports != nil {
		return d.Supports(topology)
	}
	return nil
}

// ErrUnsupported marks a mode, or a part of one, that this machine cannot
// build; cases that need it are skipped, not failed.
var ErrUnsupported = errors.New("unsupported on this machine")

// ErrNotApplicable marks a mode that cannot work in a topology by its
// nature, whatever the machine: macvlan's private mode keeps the two
// endpoints of chc apart. It wraps ErrUnsupported, so such cases are
// skipped too.
var ErrNotApplicable error = &kindOfError{"not applicable", ErrUnsupported}

type kindOfError struct {
	msg    string
	parent error
}

func (e *kindOfError) Error() string { return e.msg }
func (e *kindOfError) Unwrap() error { return e.parent }

func notApplicable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotApplicable, fmt.Sprintf(format, args...))
}

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

// Lookup returns the descriptor of a mode by name; a cni: mode's is made
// from the configuration it names.
func Lookup(name string) (Descriptor, bool) {
	d, ok := registry[name]
	if !ok {
		return lookupCNI(name)
	}
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
