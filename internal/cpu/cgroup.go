// Package cpu accounts for the CPU time that endpoints spend: each endpoint
// runs in a cgroup of its own, and a sample's CPU cost is the difference
// between two readings of that cgroup. The machine's busy, softirq and
// steal time are read machine-wide from /proc/stat, and the ksoftirqd
// threads' time from their schedstat.
package cpu

import (
	"bufio"
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Usage is cumulative CPU time.
type Usage struct {
	User, System time.Duration
}

// Total is user plus system time.
func (u Usage) Total() time.Duration { return u.User + u.System }

// Add returns u + v.
func (u Usage) Add(v Usage) Usage { return Usage{u.User + v.User, u.System + v.System} }

// Sub returns u - v.
func (u Usage) Sub(v Usage) Usage { return Usage{u.User - v.User, u.System - v.System} }

// Cgroup is a cgroup cnbench made for one endpoint.
type Cgroup struct {
	Path string
	v2   bool
}

// Hierarchy is where cnbench makes its cgroups: the cgroup2 mount when
// there is one (its cpu.stat counts time whether or not the cpu controller
// is enabled), otherwise the cgroup v1 cpuacct hierarchy.
type Hierarchy struct {
	Root string
	V2   bool
}

// FindHierarchy locates a usable hierarchy among the cgroup mounts.
func FindHierarchy() (Hierarchy, error) {
	mounts, err := CgroupMounts()
	if err != nil {
		return Hierarchy{}, fmt.Errorf("find cgroup hierarchy: %w", err)
	}
	var v1 string
	for _, m := range mounts {
		switch {
		case m.V2:
			return Hierarchy{Root: m.Point, V2: true}, nil
		case hasOption(m.Options, "cpuacct") && v1 == "":
			v1 = m.Point
		}
	}
	if v1 != "" {
		return Hierarchy{Root: v1}, nil
	}
	return Hierarchy{}, errors.New("find cgroup hierarchy: no cgroup2 mount and no cpuacct hierarchy, and none could be mounted")
}

// Mount is a cgroup hierarchy's mount: where it is reached, whether it
// is cgroup2, and its super options (the v1 controllers).
type Mount struct {
	Point   string
	V2      bool
	Options string
}

// CgroupMounts lists the cgroup hierarchies this process can reach and
// write. Where its own mount namespace shows none, as under `ip netns
// exec`, which mounts a fresh /sys in a mount namespace of its own, or
// only read-only ones, as in a container given capabilities rather than
// --privileged, it mounts the cgroup2 hierarchy there itself, at
// PrivateCgroup2: the same tree that /sys/fs/cgroup shows elsewhere,
// seen only by this mount namespace. (Through /proc/1/root, init's
// mounts can be read but not written.)
func CgroupMounts() ([]Mount, error) {
	mounts, err := readCgroupMounts("/proc/self/mountinfo")
	if err != nil || len(mounts) > 0 {
		return mounts, err
	}
	if err := mountPrivateCgroup2(); err != nil {
		return nil, err
	}
	return readCgroupMounts("/proc/self/mountinfo")
}

// PrivateCgroup2 is where CgroupMounts mounts the cgroup2 hierarchy in a
// mount namespace that has none.
const PrivateCgroup2 = "/run/cnb-cgroup2"

// mountPrivateCgroup2 mounts cgroup2 at PrivateCgroup2, unless this mount
// namespace is known to be the machine's init's: there it would add a
// mount to the whole machine, and a machine without a writable cgroup
// mount is not one cnbench changes. In a PID namespace of a container's,
// PID 1 is the container's own first process, whose mount namespace is
// the container's, and is taken for a private one.
//
// Equivalent to: mkdir -p /run/cnb-cgroup2; mount -t cgroup2 none /run/cnb-cgroup2
func mountPrivateCgroup2() error {
	self, err1 := os.Readlink("/proc/self/ns/mnt")
	init, err2 := os.Readlink("/proc/1/ns/mnt")
	if err1 == nil && err2 == nil && self == init && machinePIDNamespace() {
		return nil
	}
	if err := os.MkdirAll(PrivateCgroup2, 0o755); err != nil {
		return fmt.Errorf("mount a private cgroup2: %w", err)
	}
	if err := unix.Mount("none", PrivateCgroup2, "cgroup2", 0, ""); err != nil {
		return fmt.Errorf("mount a private cgroup2 at %s: %w", PrivateCgroup2, err)
	}
	return nil
}

// machinePIDNamespace reports whether this process sees the machine's
// own PID namespace, where PID 2 is the kernel's kthreadd; in any other,
// PID 1 is not the machine's init.
func machinePIDNamespace() bool {
	comm, err := os.ReadFile("/proc/2/comm")
	return err == nil && strings.TrimSpace(string(comm)) == "kthreadd"
}

func readCgroupMounts(mountinfo string) ([]Mount, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Fields: id parent major:minor root mountpoint options - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 6 || len(qf) < 3 || (qf[0] != "cgroup" && qf[0] != "cgroup2") {
			continue
		}
		if hasOption(pf[5], "ro") {
			// A container's view of its cgroups, unless privileged: no
			// cgroup can be made there.
			continue
		}
		out = append(out, Mount{Point: pf[4], V2: qf[0] == "cgroup2", Options: qf[2]})
	}
	return out, sc.Err()
}

func hasOption(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// Create makes the cgroup NAME under the hierarchy's root.
//
// Equivalent to: mkdir /sys/fs/cgroup/NAME
func (h Hierarchy) Create(name string) (*Cgroup, error) {
	p := filepath.Join(h.Root, name)
	if err := os.Mkdir(p, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", p, err)
	}
	return &Cgroup{Path: p, v2: h.V2}, nil
}

// List returns the names of the cgroups directly under the root whose name
// starts with prefix.
func (h Hierarchy) List(prefix string) ([]string, error) {
	entries, err := os.ReadDir(h.Root)
	if err != nil {
		return nil, fmt.Errorf("list cgroups in %s: %w", h.Root, err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Remove deletes the cgroup NAME; it must hold no process. A cgroup that
// is already gone is not an error.
func (h Hierarchy) Remove(name string) error {
	err := os.Remove(filepath.Join(h.Root, name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", name, err)
	}
	return nil
}

// Add moves a process into the cgroup.
func (c *Cgroup) Add(pid int) error {
	err := os.WriteFile(filepath.Join(c.Path, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
	if err != nil {
		return fmt.Errorf("add pid %d to cgroup %s: %w", pid, c.Path, err)
	}
	return nil
}

// Usage reads the CPU time spent by the cgroup's processes so far.
func (c *Cgroup) Usage() (Usage, error) {
	if c.v2 {
		return readCPUStat(filepath.Join(c.Path, "cpu.stat"))
	}
	user, err := readNanos(filepath.Join(c.Path, "cpuacct.usage_user"))
	if err != nil {
		return Usage{}, err
	}
	sys, err := readNanos(filepath.Join(c.Path, "cpuacct.usage_sys"))
	if err != nil {
		return Usage{}, err
	}
	return Usage{User: user, System: sys}, nil
}

func readCPUStat(path string) (Usage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Usage{}, fmt.Errorf("read cpu usage: %w", err)
	}
	var u Usage
	for _, line := range strings.Split(string(data), "\n") {
		key, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "user_usec":
			u.User = time.Duration(n) * time.Microsecond
		case "system_usec":
			u.System = time.Duration(n) * time.Microsecond
		}
	}
	return u, nil
}

func readNanos(path string) (time.Duration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read cpu usage: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return time.Duration(n), nil
}
