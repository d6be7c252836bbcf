// Package netns creates, enters and removes the network namespaces that
// stand for cnbench's emulated hosts and endpoints.
//
// A Linux network namespace belongs to a thread, not to a process, and the
// Go scheduler moves goroutines between threads freely. All code that must
// run inside a namespace therefore goes through NS.Do, which locks the
// goroutine to its OS thread, switches that thread, runs the function and
// switches back. Goroutines started inside Do run in whatever namespace
// their own thread is in, not in the one Do entered: do not start any.
// Sockets and netlink handles opened inside Do stay bound to the namespace
// after Do returns, and a process forked inside Do is born in it.
package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	vnetns "github.com/vishvananda/netns"
)

// RunDir is where named namespaces are bind-mounted, as ip-netns(8) does.
const RunDir = "/var/run/netns"

// NS is a named network namespace.
type NS struct {
	Name   string
	handle vnetns.NsHandle
}

// Create makes a new named namespace with loopback up.
//
// Equivalent to: ip netns add NAME && ip -n NAME link set lo up
func Create(name string) (*NS, error) {
	if !strings.HasPrefix(name, Prefix+"-") {
		return nil, fmt.Errorf("create namespace %q: name lacks the %q prefix", name, Prefix)
	}
	if err := prepareRunDir(); err != nil {
		return nil, fmt.Errorf("create namespace %q: %w", name, err)
	}
	var created vnetns.NsHandle
	err := onLockedThread(func() error {
		var err error
		created, err = vnetns.NewNamed(name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create namespace %q: %w", name, err)
	}
	ns := &NS{Name: name, handle: created}
	if err := ns.Do(setLoopbackUp); err != nil {
		return nil, errors.Join(fmt.Errorf("namespace %q: %w", name, err), ns.Delete())
	}
	return ns, nil
}

// Open returns a handle on an existing named namespace.
func Open(name string) (*NS, error) {
	h, err := vnetns.GetFromName(name)
	if err != nil {
		return nil, fmt.Errorf("open namespace %q: %w", name, err)
	}
	return &NS{Name: name, handle: h}, nil
}

// Path is the namespace's bind mount, usable with setns(2) and nsenter(1).
func (ns *NS) Path() string { return filepath.Join(RunDir, ns.Name) }

// Handle is the namespace's open file descriptor.
func (ns *NS) Handle() vnetns.NsHandle { return ns.handle }

// Do runs fn with the calling goroutine's thread inside the namespace.
func (ns *NS) Do(fn func() error) error {
	return doIn(ns.handle, fmt.Sprintf("namespace %q", ns.Name), fn)
}

// DoAt runs fn with the calling goroutine's thread inside the namespace
// whose file is path (such as another NS's Path); an empty path runs fn
// where the thread is. Sockets fn opens on that goroutine stay in the
// namespace after the thread leaves it.
//
// Equivalent to: nsenter --net=PATH
func DoAt(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	h, err := vnetns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", path, err)
	}
	defer h.Close()
	return doIn(h, "netns "+path, fn)
}

// doIn runs fn on a locked thread inside the namespace h, named what in
// errors.
func doIn(h vnetns.NsHandle, what string, fn func() error) error {
	var fnErr error
	err := onLockedThread(func() error {
		if err := vnetns.Set(h); err != nil {
			return fmt.Errorf("enter %s: %w", what, err)
		}
		fnErr = fn()
		return nil
	})
	if err != nil {
		return err
	}
	return fnErr
}

// Delete closes the handle and removes the namespace's name. The kernel
// destroys the namespace, and every link in it, once no process or open
// descriptor holds it any more. Deleting a namespace that is already gone
// is not an error.
//
// Equivalent to: ip netns del NAME
func (ns *NS) Delete() error {
	if ns.handle.IsOpen() {
		ns.handle.Close()
	}
	return DeleteNamed(ns.Name)
}

// DeleteNamed removes a named namespace that this process holds no handle
// on, in whatever state its name is: mounted, covered by a later bind
// mount of RunDir, or a file with nothing mounted on it.
func DeleteNamed(name string) error {
	if !strings.HasPrefix(name, Prefix+"-") || strings.ContainsRune(name, '/') {
		return fmt.Errorf("delete namespace %q: refusing a name without the %q prefix", name, Prefix)
	}
	err := removeName(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete namespace %q: %w", name, err)
	}
	return nil
}

// List returns the named namespaces that carry cnbench's prefix.
func List() ([]string, error) {
	entries, err := os.ReadDir(RunDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), Prefix+"-") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// onLockedThread runs fn on a locked OS thread and restores the thread's
// original namespace afterwards. If the namespace cannot be restored the
// thread stays locked, so the runtime discards it when the goroutine ends
// instead of handing a thread in the wrong namespace to other goroutines.
func onLockedThread(fn func() error) error {
	runtime.LockOSThread()
	orig, err := vnetns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("get current namespace: %w", err)
	}
	defer orig.Close()
	fnErr := fn()
	if err := vnetns.Set(orig); err != nil {
		return errors.Join(fnErr, fmt.Errorf("restore namespace: %w", err))
	}
	runtime.UnlockOSThread()
	return fnErr
}
