package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// The names of namespaces are bind mounts in RunDir. ip-netns(8) makes
// RunDir a mount point of its own, shared, the first time it adds a
// namespace; if it does so after cnbench has named some, its recursive
// bind mount covers theirs, and removing a name then fails with "device
// or resource busy" on a mount nothing can reach by its path any more.
// So cnbench makes RunDir what ip-netns would before it names the first
// namespace, and removes names in a way that also reaches covered mounts.

var (
	runDirMu       sync.Mutex
	runDirPrepared bool
)

// prepareRunDir makes RunDir a shared mount point, as ip-netns does, once
// per process: the recursive propagation change walks every name mounted
// there, which for each of a thousand namespaces would cost a thousand.
//
// Equivalent to: mkdir -p /var/run/netns;
// mount --make-rshared /var/run/netns ||
// { mount --rbind /var/run/netns /var/run/netns; mount --make-rshared /var/run/netns; }
func prepareRunDir() error {
	runDirMu.Lock()
	defer runDirMu.Unlock()
	if runDirPrepared {
		return nil
	}
	if err := makeRunDirShared(); err != nil {
		return err
	}
	runDirPrepared = true
	return nil
}

func makeRunDirShared() error {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return fmt.Errorf("prepare %s: %w", RunDir, err)
	}
	err := unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if err == nil {
		return nil
	}
	if err != unix.EINVAL {
		return fmt.Errorf("prepare %s: make it shared: %w", RunDir, err)
	}
	// Not a mount point yet.
	if err := unix.Mount(RunDir, RunDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("prepare %s: bind it onto itself: %w", RunDir, err)
	}
	if err := unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("prepare %s: make it shared: %w", RunDir, err)
	}
	return nil
}

// removeName unmounts every mount on the name that its path reaches and
// removes the file; a name whose file is busy with a mount its path
// cannot reach is removed from a private mount namespace.
func removeName(name string) error {
	path := filepath.Join(RunDir, name)
	if err := unmountAll(path); err != nil {
		return err
	}
	err := os.Remove(path)
	if errors.Is(err, unix.EBUSY) {
		err = removeCovered(path)
	}
	return err
}

// unmountAll peels every mount stacked on path.
func unmountAll(path string) error {
	for {
		err := unix.Unmount(path, unix.MNT_DETACH)
		switch err {
		case nil:
			continue
		case unix.EINVAL, unix.ENOENT:
			return nil // not (or no longer) a mount point, or gone
		}
		return fmt.Errorf("unmount %s: %w", path, err)
	}
}

// removeCovered removes path from a copy of the mount table that only
// this call sees: with the copy made private and every mount on RunDir
// peeled off it, the covered mounts on path show, can be unmounted there,
// and the file can be removed. Removing a file detaches what any other
// mount namespace still has mounted on it, so the kernel frees the
// namespace as ip-netns's own delete would. The thread that unshared is
// never handed back to the runtime.
func removeCovered(path string) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		done <- func() error {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return fmt.Errorf("remove %s: private mount namespace: %w", path, err)
			}
			if err := unix.Mount("", "/", "none", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return fmt.Errorf("remove %s: make the copy private: %w", path, err)
			}
			if err := unmountAll(RunDir); err != nil {
				return err
			}
			if err := unmountAll(path); err != nil {
				return err
			}
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("remove %s: %w", path, err)
			}
			return nil
		}()
	}()
	return <-done
}
