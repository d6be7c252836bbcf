// Package pinning decides which CPUs the sender and the receiver engine
// of a case may run on. A placement is a name (same_core,
// different_nodes, ...) resolved against the machine's CPU topology, or
// two explicit CPU lists. Resolving is pure; only ReadMachine looks at the
// machine.
package pinning

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Placements by name.
const (
	None           = "none"            // no pinning: the scheduler decides
	SameCore       = "same_core"       // both on one CPU
	DifferentCores = "different_cores" // each on a CPU of its own physical core, on one node when possible
	SameNode       = "same_node"       // both on the CPUs of one NUMA node
	DifferentNodes = "different_nodes" // each on the CPUs of its own NUMA node
)

// Names lists the named placements, in the order docs show them.
var Names = []string{None, SameCore, DifferentCores, SameNode, DifferentNodes}

// maxCPUs is the size of the kernel's default cpu_set_t, which
// unix.CPUSet mirrors.
const maxCPUs = 1024

// ErrCannotHonour marks a placement this machine cannot give, such as
// different_nodes on a single NUMA node; cases that ask for it are
// skipped.
var ErrCannotHonour = errors.New("cannot honour the placement")

// Check reports whether s is a placement name or an explicit
// "SENDER/RECEIVER" pair of CPU lists such as "0/1" or "0-3/4-7,9", and
// says what is expected if not.
func Check(s string) error {
	if slices.Contains(Names, s) {
		return nil
	}
	if _, _, err := parseExplicit(s); err != nil {
		return fmt.Errorf("expected %s, or CPU lists SENDER/RECEIVER such as 0/1 or 0-3/4-7, got %q", strings.Join(Names, ", "), s)
	}
	return nil
}

func parseExplicit(s string) (sender, receiver []int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return nil, nil, fmt.Errorf("no / between the sender's and the receiver's CPUs in %q", s)
	}
	if sender, err = ParseList(a); err != nil {
		return nil, nil, err
	}
	if receiver, err = ParseList(b); err != nil {
		return nil, nil, err
	}
	return sender, receiver, nil
}

// ParseList reads a CPU list in the kernel's notation: "0-3,8,10-11".
func ParseList(s string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= maxCPUs {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatList writes CPUs in the kernel's notation, ranges folded.
func FormatList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// CPU is one logical CPU this process may run on.
type CPU struct {
	ID   int
	Core int // physical core, unique across packages
	Node int // NUMA node
}

// Machine is the CPUs this process may run on.
type Machine []CPU

// Resolve returns the CPUs of the sender and the receiver; both nil for
// none. An error wrapping ErrCannotHonour says why the machine cannot
// give the placement.
func Resolve(p string, m Machine) (sender, receiver []int, err error) {
	if len(m) == 0 {
		return nil, nil, fmt.Errorf("placement %s: no CPUs known", p)
	}
	nodes := m.nodes()
	switch p {
	case None:
		return nil, nil, nil
	case SameCore:
		return []int{m[0].ID}, []int{m[0].ID}, nil
	case DifferentCores:
		// Prefer two cores of one node, so the placement does not mix in
		// a NUMA effect.
		for _, node := range nodes {
			if a, b, ok := twoCores(m, node); ok {
				return []int{a}, []int{b}, nil
			}
		}
		return nil, nil, fmt.Errorf("%w: %s needs two physical cores, and this machine lets cnbench use %d", ErrCannotHonour, p, len(m.cores()))
	case SameNode:
		return m.onNode(nodes[0]), m.onNode(nodes[0]), nil
	case DifferentNodes:
		if len(nodes) < 2 {
			return nil, nil, fmt.Errorf("%w: %s needs two NUMA nodes, and this machine has %d", ErrCannotHonour, p, len(nodes))
		}
		return m.onNode(nodes[0]), m.onNode(nodes[1]), nil
	}
	sender, receiver, err = parseExplicit(p)
	if err != nil {
		return nil, nil, fmt.Errorf("placement %q: %w", p, err)
	}
	for _, c := range append(slices.Clone(sender), receiver...) {
		if !slices.ContainsFunc(m, func(x CPU) bool { return x.ID == c }) {
			return nil, nil, fmt.Errorf("%w: placement %s names CPU %d, and cnbench may run on CPUs %s only", ErrCannotHonour, p, c, FormatList(m.ids()))
		}
	}
	return sender, receiver, nil
}

func twoCores(m Machine, node int) (a, b int, ok bool) {
	first := -1
	for _, c := range m {
		if c.Node != node {
			continue
		}
		if first < 0 {
			first = c.ID
			a = c.Core
			continue
		}
		if c.Core != a {
			return first, c.ID, true
		}
	}
	return 0, 0, false
}

func (m Machine) ids() []int {
	var out []int
	for _, c := range m {
		out = append(out, c.ID)
	}
	return out
}

func (m Machine) nodes() []int {
	var out []int
	for _, c := range m {
		if !slices.Contains(out, c.Node) {
			out = append(out, c.Node)
		}
	}
	slices.Sort(out)
	return out
}

func (m Machine) cores() []int {
	var out []int
	for _, c := range m {
		if !slices.Contains(out, c.Core) {
			out = append(out, c.Core)
		}
	}
	return out
}

func (m Machine) onNode(node int) []int {
	var out []int
	for _, c := range m {
		if c.Node == node {
			out = append(out, c.ID)
		}
	}
	slices.Sort(out)
	return out
}

// sysCPU is where the kernel describes CPUs and nodes; a variable so
// tests can point it at a copy.
var sysCPU = "/sys/devices/system"

// ReadMachine reads the CPUs this process may run on (its affinity mask,
// which a cpuset cgroup narrows) with their cores and NUMA nodes.
func ReadMachine() (Machine, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read CPU affinity: %w", err)
	}
	nodeOf := map[int]int{}
	nodeDirs, _ := filepath.Glob(filepath.Join(sysCPU, "node", "node[0-9]*"))
	for _, dir := range nodeDirs {
		node, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "node"))
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, "cpulist"))
		if err != nil {
			continue
		}
		cpus, err := ParseList(string(data))
		if err != nil {
			continue
		}
		for _, c := range cpus {
			nodeOf[c] = node
		}
	}
	var m Machine
	for id := range maxCPUs {
		if !set.IsSet(id) {
			continue
		}
		core := readInt(filepath.Join(sysCPU, "cpu", fmt.Sprintf("cpu%d", id), "topology", "core_id"), id)
		pkg := readInt(filepath.Join(sysCPU, "cpu", fmt.Sprintf("cpu%d", id), "topology", "physical_package_id"), 0)
		// core_id repeats across packages; make it unique.
		m = append(m, CPU{ID: id, Core: pkg<<16 | core, Node: nodeOf[id]})
	}
	return m, nil
}

func readInt(path string, fallback int) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return fallback
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fallback
	}
	return n
}

// Set turns a CPU list into the affinity mask sched_setaffinity takes.
func Set(cpus []int) unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return set
}
