package kubelab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"cnbench/internal/cleanup"
	"cnbench/internal/cpu"
	"cnbench/internal/netns"
)

// cgroupName is the top of the lab's cgroups in every hierarchy; node N's
// kubelet puts its pods under cgroupName/N.
func cgroupName(tok netns.Token) string { return tok.Name("k8s") }

// makeCgroups makes each node's cgroup root, which kubelet requires to
// exist, in every cgroup v1 hierarchy, or in the cgroup2 one where there
// is no v1. A v1 cpuset cgroup takes no process until it has CPUs and
// memory nodes, so it gets its parent's.
//
// Equivalent to, for every hierarchy H and node N:
//
//	mkdir -p H/cnb-TOKEN-k8s/N
//	cp H/cpuset.cpus H/cnb-TOKEN-k8s/cpuset.cpus   (and cpuset.mems, one level at a time)
func (c *Cluster) makeCgroups() error {
	mounts, err := cpu.CgroupMounts()
	if err != nil {
		return fmt.Errorf("kubelab cgroups: %w", err)
	}
	var v1, v2 []cpu.Mount
	for _, m := range mounts {
		if m.V2 {
			v2 = append(v2, m)
		} else {
			v1 = append(v1, m)
		}
	}
	if len(v1) == 0 {
		v1 = v2
	}
	if len(v1) == 0 {
		return errors.New("kubelab cgroups: no writable cgroup hierarchy")
	}
	for _, m := range v1 {
		top := filepath.Join(m.Point, cgroupName(c.Token))
		dirs := []string{top}
		for _, n := range c.Nodes {
			dirs = append(dirs, filepath.Join(top, n.Name))
		}
		for _, d := range dirs {
			if err := makeCgroup(m, d); err != nil {
				return err
			}
		}
	}
	return nil
}

func makeCgroup(m cpu.Mount, dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("kubelab cgroup: %w", err)
	}
	if m.V2 {
		// Hand the controllers this cgroup has on to the pods' cgroups.
		have, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		if err != nil {
			return fmt.Errorf("kubelab cgroup: %w", err)
		}
		var enable []string
		for _, ctl := range strings.Fields(string(have)) {
			enable = append(enable, "+"+ctl)
		}
		if len(enable) == 0 {
			return nil
		}
		return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0o644)
	}
	if !slices.Contains(strings.Split(m.Options, ","), "cpuset") {
		return nil
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		v, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
		if err != nil {
			return fmt.Errorf("kubelab cgroup: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
			return fmt.Errorf("kubelab cgroup %s: %w", filepath.Join(dir, f), err)
		}
	}
	return nil
}

// removeCgroups removes the lab's cgroups in every hierarchy, killing
// what they still hold: the pods' containers.
func removeCgroups(tok netns.Token) error {
	return cleanup.RemoveCgroupTree(cgroupName(tok))
}

// cgroupPIDs lists the processes in the lab's cgroups.
func cgroupPIDs(tok netns.Token) []int {
	mounts, err := cpu.CgroupMounts()
	if err != nil {
		return nil
	}
	var pids []int
	for _, m := range mounts {
		_ = filepath.WalkDir(filepath.Join(m.Point, cgroupName(tok)), func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				pids = append(pids, cleanup.CgroupPIDs(p)...)
			}
			return nil
		})
	}
	return pids
}
