package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Attach names the network namespace of process pid, such as a
// container's, so that it can be entered and swept like any namespace
// cnbench creates. The name holds the namespace alive after the process
// ends, until Delete removes it.
//
// Equivalent to: touch /var/run/netns/NAME;
// mount --bind /proc/PID/ns/net /var/run/netns/NAME
// (after preparing /var/run/netns as ip netns add does)
func Attach(name string, pid int) (*NS, error) {
	if !strings.HasPrefix(name, Prefix+"-") {
		return nil, fmt.Errorf("attach namespace %q: name lacks the %q prefix", name, Prefix)
	}
	if err := prepareRunDir(); err != nil {
		return nil, fmt.Errorf("attach namespace %q: %w", name, err)
	}
	path := filepath.Join(RunDir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return nil, fmt.Errorf("attach namespace %q: %w", name, err)
	}
	f.Close()
	src := fmt.Sprintf("/proc/%d/ns/net", pid)
	if err := unix.Mount(src, path, "none", unix.MS_BIND, ""); err != nil {
		return nil, errors.Join(fmt.Errorf("attach namespace %q to %s: %w", name, src, err), os.Remove(path))
	}
	ns, err := Open(name)
	if err != nil {
		return nil, errors.Join(err, DeleteNamed(name))
	}
	return ns, nil
}
