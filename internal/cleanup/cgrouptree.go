package cleanup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"cnbench/internal/cpu"
	"cnbench/internal/netns"
)

// cgroupMounts lists the mount points of every cgroup hierarchy, v1 and
// v2, that this process can reach.
func cgroupMounts() ([]string, error) {
	mounts, err := cpu.CgroupMounts()
	if err != nil {
		return nil, fmt.Errorf("list cgroup hierarchies: %w", err)
	}
	var out []string
	for _, m := range mounts {
		out = append(out, m.Point)
	}
	return out, nil
}

// RemoveCgroupTree removes the top-level cgroup name, and every cgroup
// below it, from every hierarchy: a container runtime such as Docker's
// makes one child per container under the parent it is given, in each
// controller. Processes still in the tree are killed first; a tree that
// does not exist is no error. Only names with cnbench's prefix are
// accepted.
//
// Equivalent to: find /sys/fs/cgroup/*/NAME -depth -type d -exec rmdir {} \;
func RemoveCgroupTree(name string) error {
	if !strings.HasPrefix(name, netns.Prefix+"-") || strings.ContainsRune(name, '/') {
		return fmt.Errorf("remove cgroup tree %q: not a cnbench cgroup name", name)
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mounts {
		root := filepath.Join(m, name)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		errs = append(errs, removeTree(root, 3*time.Second))
	}
	return errors.Join(errs...)
}

// removeTree removes a cgroup directory bottom-up, killing what it still
// holds and retrying while a process killed a moment ago is still
// leaving.
func removeTree(root string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		var last error
		for i := len(dirs) - 1; i >= 0; i-- {
			for _, pid := range CgroupPIDs(dirs[i]) {
				if pid != os.Getpid() {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
				last = fmt.Errorf("remove cgroup %s: %w", dirs[i], err)
			}
		}
		if last == nil || time.Now().After(deadline) {
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sweepCgroupTrees removes the cgroup trees of a dead run: the parents
// its private container runtimes put their containers under
// (cnb-TOKEN-dk-*, and cnb-TOKEN-k8s of a test's Kubernetes nodes), in
// every hierarchy. The sweep's own pass over cnbench's cgroups then
// reports them.
func sweepCgroupTrees(tok netns.Token) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var errs []error
	for _, m := range mounts {
		matches, _ := filepath.Glob(filepath.Join(m, tok.Name("dk-")+"*"))
		matches = append(matches, filepath.Join(m, tok.Name("k8s")))
		for _, dir := range matches {
			if _, err := os.Stat(dir); err != nil {
				continue
			}
			name := filepath.Base(dir)
			if seen[name] {
				continue
			}
			seen[name] = true
			errs = append(errs, RemoveCgroupTree(name))
		}
	}
	return errors.Join(errs...)
}

// sweepDirs removes the private directories of a dead run's CNI networks
// and Docker daemons (cnb-TOKEN-cni-*, cnb-TOKEN-dk-* in the temporary
// directory); what the plugins and daemons built inside the run's
// namespaces went with the namespaces.
func sweepDirs(tok netns.Token) error {
	var errs []error
	// Guests' images (img) and directories (vmN-) go with their run too.
	for _, kind := range []string{"cni-", "dk-", "img", "vm"} {
		matches, _ := filepath.Glob(filepath.Join(os.TempDir(), tok.Name(kind)+"*"))
		for _, dir := range matches {
			if IsOwnDir(dir) {
				errs = append(errs, os.RemoveAll(dir))
			}
		}
	}
	return errors.Join(errs...)
}
