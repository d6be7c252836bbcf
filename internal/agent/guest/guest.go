// Package guest is cnbench inside a VM guest: the guest's init, which mounts
// the kernel's file systems and loads the modules the image carries, and
// the agent that builds the guest's part of a topology with the same
// modes cnbench builds on emulated hosts, and starts engines in its
// endpoints. It answers the agents' protocol (package agent/protocol)
// over the virtio-serial port vm.CtlPort, as an agent on a machine
// answers it over HTTP/2, and powers the guest off when that channel
// closes, so a guest never outlives the cnbench that booted it.
package guest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"cnbench/internal/agent/protocol"
	"cnbench/internal/cpu"
	"cnbench/internal/mode"
	"cnbench/internal/modes"
	"cnbench/internal/netns"
	"cnbench/internal/netstat"
	"cnbench/internal/selfexe"
	"cnbench/internal/topo"
	"cnbench/internal/vm"
)

// Main runs the guest: it must be process 1.
func Main() error {
	if os.Getpid() != 1 {
		return errors.New("guest-agent is the init of a cnbench guest and runs only as process 1")
	}
	err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cnbench guest agent:", err)
	}
	unix.Sync()
	// Process 1 must not exit: the kernel would panic. Powering off ends
	// qemu.
	return unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
}

func run() error {
	if err := mountAll(); err != nil {
		return err
	}
	if err := loadModules(); err != nil {
		return err
	}
	ctl, err := openPort(vm.CtlPort, 20*time.Second)
	if err != nil {
		return err
	}
	a := &agent{endpoints: map[string]*endpoint{}, modes: map[string]mode.Mode{}}
	return a.serve(ctl)
}

// mountAll mounts what the agent and its engines read.
//
// Equivalent to: mount -t proc proc /proc; mount -t sysfs sys /sys;
// mount -t devtmpfs dev /dev; mount -t cgroup2 none /sys/fs/cgroup
func mountAll() error {
	for _, m := range []struct{ fs, dir string }{
		{"proc", "/proc"}, {"sysfs", "/sys"}, {"devtmpfs", "/dev"}, {"cgroup2", "/sys/fs/cgroup"},
	} {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.fs, m.dir, m.fs, 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount %s on %s: %w", m.fs, m.dir, err)
		}
	}
	return nil
}

// loadModules loads the image's modules in the order the image lists
// them, dependencies first.
//
// Equivalent to: insmod FILE, for each file
func loadModules() error {
	data, err := os.ReadFile("/etc/cnbench/modules")
	if err != nil {
		return fmt.Errorf("read module list: %w", err)
	}
	for _, path := range strings.Fields(string(data)) {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("load module: %w", err)
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		if errors.Is(err, unix.ENODEV) {
			// A module for CPU instructions the guest's CPU lacks
			// (aesni_intel): the kernel's generic code serves instead.
			fmt.Fprintf(os.Stderr, "cnbench guest agent: %s: not for this CPU, skipped\n", filepath.Base(path))
			continue
		}
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("load module %s: %w", filepath.Base(path), err)
		}
	}
	return nil
}

// openPort opens the virtio-serial port with the given name (there is no
// udev to make /dev/virtio-ports links) and waits until the host side is
// connected: until then a read would return end-of-file.
func openPort(name string, limit time.Duration) (*os.File, error) {
	deadline := time.Now().Add(limit)
	var dev string
	for dev == "" {
		names, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
		for _, n := range names {
			if data, err := os.ReadFile(n); err == nil && strings.TrimSpace(string(data)) == name {
				dev = "/dev/" + filepath.Base(filepath.Dir(n))
			}
		}
		if dev == "" {
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("no virtio-serial port %s after %v", name, limit)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Opened blocking, not through Go's poller, so that the descriptor
	// can be handed to an engine as its stdin and stdout.
	fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open port %s (%s): %w", name, dev, err)
	}
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLOUT}}
		if _, err := unix.Poll(fds, 0); err != nil && !errors.Is(err, unix.EINTR) {
			unix.Close(fd)
			return nil, fmt.Errorf("poll port %s: %w", name, err)
		}
		if fds[0].Revents&unix.POLLHUP == 0 {
			return os.NewFile(uintptr(fd), dev), nil
		}
		if time.Now().After(deadline) {
			unix.Close(fd)
			return nil, fmt.Errorf("port %s: the host did not connect within %v", name, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type endpoint struct {
	ep     *topo.Endpoint
	cgroup *cpu.Cgroup
}

type agent struct {
	setup     *vm.Setup
	t         *topo.Topology
	host      *topo.Host
	modes     map[string]mode.Mode
	endpoints map[string]*endpoint
}

// serve answers requests until the host closes the channel.
func (a *agent) serve(ctl *os.File) error {
	r := bufio.NewReaderSize(ctl, 1<<16)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			reply := a.handle(line)
			out, _ := json.Marshal(reply)
			if _, werr := ctl.Write(append(out, '\n')); werr != nil {
				return fmt.Errorf("write reply: %w", werr)
			}
		}
		if err != nil {
			// The host is gone: the run ended or died.
			return nil
		}
	}
}

func (a *agent) handle(line []byte) (reply vm.Reply) {
	// A bug must not take the guest's init down: the host would see only
	// a closed channel.
	defer func() {
		if p := recover(); p != nil {
			reply = vm.Reply{Error: fmt.Sprintf("guest agent panic: %v", p)}
		}
	}()
	var req vm.Request
	if err := json.Unmarshal(line, &req); err != nil {
		return vm.Reply{Error: fmt.Sprintf("bad request: %v", err)}
	}
	r, err := a.dispatch(req)
	if err != nil {
		return vm.Reply{Error: err.Error(), Unsupported: errors.Is(err, mode.ErrUnsupported) || errors.Is(err, vm.ErrGuestUnsupported)}
	}
	r.OK = true
	return r
}

func (a *agent) dispatch(req vm.Request) (vm.Reply, error) {
	switch req.Op {
	case vm.OpHello:
		var u unix.Utsname
		_ = unix.Uname(&u)
		return vm.Reply{Kernel: unix.ByteSliceToString(u.Release[:])}, nil
	case vm.OpSetup:
		return vm.Reply{}, a.doSetup(req.Setup)
	case vm.OpEndpoint:
		if req.Endpoint == nil {
			return vm.Reply{}, errors.New("endpoint: missing request")
		}
		return a.doEndpoint(req.Endpoint.Mode, req.Endpoint.Name)
	case vm.OpEngine:
		if req.Engine == nil {
			return vm.Reply{}, errors.New("engine: missing request")
		}
		return vm.Reply{}, a.doEngine(req.Engine.Endpoint, req.Port)
	case vm.OpUsage:
		if req.Usage == nil {
			return vm.Reply{}, errors.New("usage: missing request")
		}
		return a.usage(req.Usage.Endpoint)
	default:
		return vm.Reply{}, fmt.Errorf("unknown op %q", req.Op)
	}
}

func (a *agent) doSetup(s *vm.Setup) error {
	if s == nil {
		return errors.New("setup: missing setup")
	}
	if a.t != nil {
		return errors.New("setup: the guest is set up already")
	}
	mac, err := net.ParseMAC(s.MAC)
	if err != nil {
		return fmt.Errorf("setup: mac %q: %w", s.MAC, err)
	}
	addr, err := netip.ParsePrefix(s.Addr)
	if err != nil {
		return fmt.Errorf("setup: addr %q: %w", s.Addr, err)
	}
	routes := map[netip.Prefix]netip.Addr{}
	for _, r := range s.Routes {
		dst, err1 := netip.ParsePrefix(r.Dst)
		via, err2 := netip.ParseAddr(r.Via)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("setup: route %s via %s: %w", r.Dst, r.Via, err)
		}
		routes[dst] = via
	}
	tok := netns.Token(s.Token)
	if !tok.Valid() {
		return fmt.Errorf("setup: bad token %q", s.Token)
	}
	opts := topo.Options{MTU: s.MTU, Offloads: topo.Offloads{GRO: s.GRO, GSO: s.GSO, TSO: s.TSO, TxChecksum: s.TxChecksum}}
	t, h, err := topo.AdoptNIC(tok, opts, s.Index, mac, addr, routes)
	if err != nil {
		return err
	}
	a.setup, a.t, a.host = s, t, h
	return nil
}

func (a *agent) doEndpoint(modeName, name string) (vm.Reply, error) {
	if a.t == nil {
		return vm.Reply{}, errors.New("endpoint: the guest is not set up")
	}
	if _, dup := a.endpoints[name]; dup {
		return vm.Reply{}, fmt.Errorf("endpoint %s exists already", name)
	}
	if !slices.Contains(modes.GuestModes(), modeName) {
		return vm.Reply{}, fmt.Errorf("%w: mode %s is not built inside guests (they build %s)", vm.ErrGuestUnsupported, modeName, strings.Join(modes.GuestModes(), ", "))
	}
	d, ok := modes.Lookup(modeName)
	if !ok {
		return vm.Reply{}, fmt.Errorf("unknown mode %q", modeName)
	}
	if err := d.Available(); err != nil {
		return vm.Reply{}, err
	}
	m, ok := a.modes[modeName]
	if !ok {
		m = d.New(a.t)
		a.modes[modeName] = m
	}
	ep, err := m.Endpoint(a.host, name)
	if err != nil {
		return vm.Reply{}, err
	}
	if err := a.t.ApplyOffloads(); err != nil {
		return vm.Reply{}, err
	}
	hier := cpu.Hierarchy{Root: "/sys/fs/cgroup", V2: true}
	cg, err := hier.Create(a.t.Token.Name(name))
	if err != nil {
		return vm.Reply{}, err
	}
	a.endpoints[name] = &endpoint{ep: ep, cgroup: cg}
	return vm.Reply{Endpoint: &protocol.EndpointResponse{Addr: ep.Addr.String(), NS: ep.NS.Name}}, nil
}

// usage reads an endpoint's CPU time and link counters, and the guest's
// softirq and steal time, as an agent on a machine answers the same
// request.
func (a *agent) usage(name string) (vm.Reply, error) {
	e, err := a.endpoint(name)
	if err != nil {
		return vm.Reply{}, err
	}
	u, err := e.cgroup.Usage()
	if err != nil {
		return vm.Reply{}, err
	}
	machine, err := cpu.ReadMachine()
	if err != nil {
		return vm.Reply{}, err
	}
	links, err := netstat.ReadLinks(e.ep.NS)
	return vm.Reply{Usage: &protocol.UsageResponse{UserNS: int64(u.User), SystemNS: int64(u.System),
		SoftirqNS: int64(machine.Softirq), StealNS: int64(machine.Steal), Links: links}}, err
}

func (a *agent) endpoint(name string) (*endpoint, error) {
	e, ok := a.endpoints[name]
	if !ok {
		return nil, fmt.Errorf("no endpoint %q in this guest", name)
	}
	return e, nil
}

// doEngine starts `cnbench engine` in the endpoint's namespace and
// cgroup, with the port as its stdin and stdout; it ends when the host
// closes the port.
func (a *agent) doEngine(name, port string) error {
	e, err := a.endpoint(name)
	if err != nil {
		return err
	}
	f, err := openPort(port, 10*time.Second)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := selfexe.Exec(selfexe.Command("engine"))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f, f, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := e.ep.NS.Do(cmd.Start); err != nil {
		return fmt.Errorf("start engine in %s: %w", e.ep.NS.Name, err)
	}
	go func() { _ = cmd.Wait() }()
	if err := e.cgroup.Add(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	return nil
}
