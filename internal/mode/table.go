package mode

import (
	"slices"
	"sort"
	"strings"
)

// Host is the native baseline's name: the one mode every list puts
// first, as the reference the others are measured against.
const Host = "host"

// Table is every mode cnbench knows: a row per named mode, and patterns
// for families whose modes are named by an argument (cni:FILE) and made
// at lookup.
type Table struct {
	Rows     []Descriptor
	Patterns []Pattern
}

// Pattern makes the rows of modes named by a prefix and an argument.
type Pattern struct {
	// Prefix starts every name the pattern makes ("cni:").
	Prefix string
	// Make makes the row of a name with the prefix; false if it makes
	// none.
	Make func(name string) (Descriptor, bool)
}

// Lookup returns the row of a mode by name; a pattern's is made from its
// name.
func (t Table) Lookup(name string) (Descriptor, bool) {
	d, ok := t.lookup(name)
	if ok {
		d.guestModes = t.GuestModes()
	}
	return d, ok
}

func (t Table) lookup(name string) (Descriptor, bool) {
	for _, d := range t.Rows {
		if d.Name == name {
			return d, true
		}
	}
	for _, p := range t.Patterns {
		if strings.HasPrefix(name, p.Prefix) {
			return p.Make(name)
		}
	}
	return Descriptor{}, false
}

// Names lists the rows' modes, host first, then alphabetically.
func (t Table) Names() []string {
	names := make([]string, 0, len(t.Rows))
	for _, d := range t.Rows {
		names = append(names, d.Name)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == Host) != (names[j] == Host) {
			return names[i] == Host
		}
		return names[i] < names[j]
	})
	return names
}

// PatternNames are the mode names scenarios may use beyond Names: an
// entry ending in "*" admits every name with its prefix.
func (t Table) PatternNames() []string {
	var out []string
	for _, p := range t.Patterns {
		out = append(out, p.Prefix+"*")
	}
	return out
}

// GuestModes are the modes VM guests build, in the table's order.
func (t Table) GuestModes() []string {
	var out []string
	for _, d := range t.Rows {
		if d.Guests.Build {
			out = append(out, d.Name)
		}
	}
	return out
}

// GuestModules are the guest kernel modules the modes built in guests
// need, each once, in the table's order.
func (t Table) GuestModules() []string {
	var out []string
	for _, d := range t.Rows {
		for _, m := range d.Guests.Modules {
			if d.Guests.Build && !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// Uncounted reports whether some mode creates links of the kind (as
// netlink names it: "bridge", "vxlan") whose counters are not traffic of
// their own.
func (t Table) Uncounted(kind string) bool {
	for _, d := range t.Rows {
		if slices.Contains(d.Uncounted, kind) {
			return true
		}
	}
	return false
}
