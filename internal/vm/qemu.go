// Package vm boots the small virtual machines that stand for cnbench's VM
// hosts: qemu-system-x86_64 with Debian's cloud kernel and an initramfs
// cnbench builds itself, holding busybox, the cnbench executable (the
// guest's init, agent and engines) and the kernel modules the guest needs.
//
// The guest has one NIC, virtio-net on a tap device in the emulated host's
// namespace, and no other network: qemu gets no user-mode networking. It
// is controlled over virtio-serial ports, each a unix socket on this side:
// one for the guest agent (proto.go) and one per engine, which carries
// the engine's own stdin/stdout protocol. The guest agent powers the guest
// off when its control channel closes, and qemu is started with a
// parent-death signal, so a guest never outlives the process that booted
// it.
package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"cnbench/internal/agent/protocol"
	"cnbench/internal/cleanup"
	"cnbench/internal/daemon"
	"cnbench/internal/excerpt"
	"cnbench/internal/netns"
)

// Accelerators.
const (
	KVM = "kvm"
	TCG = "tcg"
)

// ErrGuestUnsupported marks what the guest cannot build; a case that
// needs it is skipped.
var ErrGuestUnsupported = errors.New("unsupported in the guest")

// Config shapes a guest.
type Config struct {
	// Binary is the cnbench executable the guest runs as its agent and
	// engines.
	Binary string
	// ImageDir holds built initramfs images.
	ImageDir string
	// Accel is KVM or TCG.
	Accel    string
	MemoryMB int
	CPUs     int
	// BootTimeout bounds the wait for the agent; zero means a default
	// for the accelerator.
	BootTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.MemoryMB == 0 {
		c.MemoryMB = 384
	}
	if c.CPUs == 0 {
		c.CPUs = 1
	}
	if c.BootTimeout == 0 {
		c.BootTimeout = 60 * time.Second
		if c.Accel == KVM {
			c.BootTimeout = 20 * time.Second
		}
	}
	return c
}

// qemuBinary is the emulator cnbench runs.
const qemuBinary = "qemu-system-x86_64"

// Available reports whether this machine can boot guests: qemu, busybox
// and the guest kernel are installed.
func Available() error {
	if _, err := exec.LookPath(qemuBinary); err != nil {
		return fmt.Errorf("%s is not installed (bash scripts/setup.sh installs qemu-system-x86)", qemuBinary)
	}
	if _, err := findBusybox(); err != nil {
		return err
	}
	_, err := FindKernel()
	return err
}

// Guest is a running VM.
type Guest struct {
	Name  string
	Accel string
	// MAC is the guest NIC's address.
	MAC string
	// BootTime runs from starting qemu to the agent's first answer.
	BootTime time.Duration
	Kernel   string

	dir    string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	waited chan struct{}
	waitMu sync.Mutex
	// booted is set once the agent answered, closing once cnbench closes
	// the guest, broken once its control or an engine channel failed, and killed once
	// cnbench kills qemu: an end after booting that cnbench neither asked
	// for nor caused is a death to report.
	booted, closing, broken, killed atomic.Bool
	// desc names qemu, the guest and where it runs, for messages.
	desc string

	mu       sync.Mutex
	ctl      net.Conn
	ctlR     *bufio.Reader
	nextPort int
}

// CreateTap creates a tap device in namespace ns and returns the open
// queue qemu is to use. The device is not persistent: it goes away when
// the last holder of the queue, qemu, exits. It carries virtio-net
// headers, so segmentation and checksum offloads pass to the guest.
//
// Equivalent to: ip -n NS tuntap add NAME mode tap vnet_hdr
func CreateTap(ns *netns.NS, name string) (*os.File, error) {
	var tap *os.File
	err := ns.Do(func() error {
		// /dev/net/tun makes the device in the namespace of the thread
		// that opens it, which Do has switched.
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		var req struct {
			name  [unix.IFNAMSIZ]byte
			flags uint16
			_     [22]byte
		}
		copy(req.name[:], name)
		req.flags = unix.IFF_TAP | unix.IFF_NO_PI | unix.IFF_VNET_HDR
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNSETIFF, uintptr(unsafe.Pointer(&req))); errno != 0 {
			unix.Close(fd)
			return errno
		}
		tap = os.NewFile(uintptr(fd), "/dev/net/tun:"+name)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("create tap %s in %q: %w", name, ns.Name, err)
	}
	return tap, nil
}

// Boot starts a guest in namespace ns with its NIC on tap (nil for a
// guest without a NIC), and waits until its agent answers. name is unique
// among the run's guests and names its directory. The tap is handed to
// qemu and closed here.
func Boot(ctx context.Context, ns *netns.NS, token netns.Token, name string, tap *os.File, mac string, cfg Config) (g *Guest, err error) {
	cfg = cfg.withDefaults()
	if tap != nil {
		defer tap.Close()
	}
	img, err := BuildImage(cfg.ImageDir, cfg.Binary)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", token.Name(name)+"-")
	if err != nil {
		return nil, fmt.Errorf("boot guest %s: %w", name, err)
	}
	guest := &Guest{Name: name, Accel: cfg.Accel, MAC: mac, dir: dir, stderr: &bytes.Buffer{}, waited: make(chan struct{}),
		desc: qemuBinary + " of guest " + name}
	if ns != nil {
		guest.desc += " in " + ns.Name
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, guest.Close())
			g = nil
		}
	}()
	args := qemuArgs(img, cfg, dir, tap != nil, mac)
	guest.cmd = exec.Command(qemuBinary, args...)
	guest.cmd.Stdout, guest.cmd.Stderr = io.Discard, &lockedWriter{w: guest.stderr, mu: &guest.waitMu}
	// The parent-death signal ends the guest with cnbench, even if it is
	// killed; a process group of its own keeps terminal signals away.
	guest.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if tap != nil {
		guest.cmd.ExtraFiles = []*os.File{tap} // fd 3
	}
	start := time.Now()
	startQemu := func() error { return guest.cmd.Start() }
	if ns != nil {
		err = ns.Do(startQemu)
	} else {
		err = startQemu()
	}
	if err != nil {
		return nil, fmt.Errorf("boot guest %s: start %s: %w", name, qemuBinary, err)
	}
	go func() {
		_ = guest.cmd.Wait()
		// Reported before waited is closed, so that whoever waits for
		// the guest's end finds its death among the network's.
		if guest.booted.Load() && !guest.killed.Load() && !(guest.closing.Load() && guest.cmd.ProcessState.Success()) {
			daemon.Report(token, guest.death())
		}
		close(guest.waited)
	}()
	if err := guest.connect(ctx, cfg.BootTimeout); err != nil {
		return nil, fmt.Errorf("boot guest %s (%s): %w", name, cfg.Accel, err)
	}
	guest.BootTime = time.Since(start)
	guest.booted.Store(true)
	return guest, nil
}

// qemuArgs is the guest's command line. -nodefaults and -nic none leave
// the guest no device cnbench did not ask for: no user-mode network, no
// display, no disks.
func qemuArgs(img *Image, cfg Config, dir string, nic bool, mac string) []string {
	accel, cpuModel := "tcg,thread=multi", "max"
	if cfg.Accel == KVM {
		accel, cpuModel = "kvm", "host"
	}
	args := []string{
		"-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
		"-machine", "pc", "-accel", accel, "-cpu", cpuModel,
		"-smp", fmt.Sprint(cfg.CPUs), "-m", fmt.Sprint(cfg.MemoryMB),
		"-kernel", img.Kernel.Image, "-initrd", img.Path,
		"-append", kernelCommandLine,
		"-serial", "file:" + filepath.Join(dir, "console.log"),
		"-nic", "none",
		"-device", "virtio-serial-pci,id=vs",
	}
	ports := []string{CtlPort}
	for i := range EnginePorts {
		ports = append(ports, EnginePort(i))
	}
	for i, p := range ports {
		id := fmt.Sprintf("ch%d", i)
		args = append(args,
			"-chardev", fmt.Sprintf("socket,id=%s,path=%s,server=on,wait=off", id, socketPath(dir, p)),
			"-device", fmt.Sprintf("virtserialport,bus=vs.0,chardev=%s,name=%s", id, p))
	}
	if nic {
		args = append(args,
			"-netdev", "tap,id=n0,fd=3",
			"-device", "virtio-net-pci,netdev=n0,mac="+mac)
	}
	return args
}

// kernelCommandLine keeps the boot short: no console chatter (the serial
// port is emulated a byte at a time), and no probing of hardware the
// machine does not have.
const kernelCommandLine = "console=ttyS0 quiet loglevel=1 panic=-1 net.ifnames=0 mitigations=off " +
	"i8042.noaux=1 i8042.nokbd=1 i8042.nopnp=1 tsc=reliable no_timer_check cryptomgr.notests random.trust_cpu=on"

func socketPath(dir, port string) string { return filepath.Join(dir, port+".sock") }

// connect waits for the control socket, then for the agent's hello.
func (g *Guest) connect(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var conn net.Conn
	for {
		var err error
		conn, err = net.Dial("unix", socketPath(g.dir, CtlPort))
		if err == nil {
			break
		}
		select {
		case <-g.waited:
			return g.exited()
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no control socket after %v: %w", limit, err)
		}
	}
	g.ctl, g.ctlR = conn, bufio.NewReaderSize(conn, 1<<16)
	type result struct {
		r   Reply
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := g.callUntil(Request{Op: OpHello}, deadline)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return res.err
		}
		g.Kernel = res.r.Kernel
		return nil
	case <-g.waited:
		return g.exited()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *Guest) exited() error {
	g.waitMu.Lock()
	msg := strings.TrimSpace(g.stderr.String())
	g.waitMu.Unlock()
	return fmt.Errorf("%s (%s)%s", g.death(), msg, g.consoleTail())
}

// death says how qemu ended, once it has: "qemu-system-x86_64 of guest
// vm3 in cnb-1a2b-h1 (pid 123) was killed by SIGKILL".
func (g *Guest) death() string {
	return g.desc + " " + cleanup.HowEnded(g.cmd.ProcessState)
}

// awaitDeath gives a qemu whose control channel just failed dyingGrace to
// end, and says how it ended, unless cnbench ended it; empty if it runs
// on.
func (g *Guest) awaitDeath() string {
	select {
	case <-g.waited:
		if g.killed.Load() {
			return ""
		}
		return g.death()
	case <-time.After(dyingGrace):
		return ""
	}
}

// consoleTail is the end of the guest's console, for errors.
func (g *Guest) consoleTail() string {
	data, err := os.ReadFile(filepath.Join(g.dir, "console.log"))
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return ""
	}
	return "; guest console: " + excerpt.Tail(string(data), 6000)
}

// callTimeout bounds every control request after the boot.
const callTimeout = 60 * time.Second

func (g *Guest) call(req Request) (Reply, error) {
	return g.callUntil(req, time.Now().Add(callTimeout))
}

func (g *Guest) callUntil(req Request, deadline time.Time) (Reply, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctl == nil {
		return Reply{}, fmt.Errorf("guest %s: %s: not connected", g.Name, req.Op)
	}
	line, err := json.Marshal(req)
	if err != nil {
		return Reply{}, err
	}
	_ = g.ctl.SetDeadline(deadline)
	if _, err := g.ctl.Write(append(line, '\n')); err != nil {
		return Reply{}, fmt.Errorf("guest %s: send %s: %w", g.Name, req.Op, err)
	}
	resp, err := g.ctlR.ReadBytes('\n')
	if err != nil {
		g.broken.Store(true)
		err = fmt.Errorf("guest %s: no answer to %s: %w", g.Name, req.Op, err)
		if d := g.awaitDeath(); d != "" {
			err = fmt.Errorf("%w (%s)", err, d)
		}
		return Reply{}, fmt.Errorf("%w%s", err, g.consoleTail())
	}
	var r Reply
	if err := json.Unmarshal(resp, &r); err != nil {
		return Reply{}, fmt.Errorf("guest %s: bad answer to %s: %w", g.Name, req.Op, err)
	}
	if !r.OK {
		if r.Unsupported {
			return r, fmt.Errorf("guest %s: %s: %w: %s", g.Name, req.Op, ErrGuestUnsupported, r.Error)
		}
		return r, fmt.Errorf("guest %s: %s: %s", g.Name, req.Op, r.Error)
	}
	return r, nil
}

// Setup makes the guest a host of the topology.
func (g *Guest) Setup(s Setup) error {
	_, err := g.call(Request{Op: OpSetup, Setup: &s})
	return err
}

// Endpoint places an endpoint of the mode in the guest and returns its
// address.
func (g *Guest) Endpoint(mode, name string) (netip.Addr, error) {
	r, err := g.call(Request{Op: OpEndpoint, Endpoint: &protocol.EndpointRequest{Mode: mode, Name: name}})
	if err != nil {
		return netip.Addr{}, err
	}
	if r.Endpoint == nil {
		return netip.Addr{}, fmt.Errorf("guest %s: endpoint %s: no address in the reply", g.Name, name)
	}
	addr, err := netip.ParseAddr(r.Endpoint.Addr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("guest %s: endpoint %s: bad address %q", g.Name, name, r.Endpoint.Addr)
	}
	return addr, nil
}

// StartEngine starts an engine in the guest's endpoint and returns its
// stdin and stdout: closing it ends the engine.
func (g *Guest) StartEngine(endpoint string) (io.ReadWriteCloser, error) {
	g.mu.Lock()
	i := g.nextPort
	g.nextPort++
	g.mu.Unlock()
	if i >= EnginePorts {
		return nil, fmt.Errorf("guest %s: no engine port left for %s (it has %d)", g.Name, endpoint, EnginePorts)
	}
	port := EnginePort(i)
	// Connected first: the guest's engine starts once the port is open
	// on this side, or its first read would find it closed.
	conn, err := net.Dial("unix", socketPath(g.dir, port))
	if err != nil {
		return nil, fmt.Errorf("guest %s: connect engine port %s: %w", g.Name, port, err)
	}
	if _, err := g.call(Request{Op: OpEngine, Engine: &protocol.EngineRequest{Endpoint: endpoint}, Port: port}); err != nil {
		conn.Close()
		return nil, err
	}
	return &engineStream{Conn: conn, g: g}, nil
}

// engineStream is an engine's channel into the guest. One that fails
// before cnbench closes it marks the guest's channels broken, as the
// control channel's failure does: qemu may be dying (see Close).
type engineStream struct {
	net.Conn
	g      *Guest
	closed atomic.Bool
}

func (s *engineStream) Read(p []byte) (int, error) {
	n, err := s.Conn.Read(p)
	s.failed(err)
	return n, err
}

func (s *engineStream) Write(p []byte) (int, error) {
	n, err := s.Conn.Write(p)
	s.failed(err)
	return n, err
}

func (s *engineStream) Close() error {
	s.closed.Store(true)
	return s.Conn.Close()
}

func (s *engineStream) failed(err error) {
	if err != nil && !s.closed.Load() {
		s.g.broken.Store(true)
	}
}

// Usage is the CPU time the engines of an endpoint have used, as the
// guest accounts it, and the counters of the links in its namespace.
func (g *Guest) Usage(endpoint string) (protocol.UsageResponse, error) {
	r, err := g.call(Request{Op: OpUsage, Usage: &protocol.UsageRequest{Endpoint: endpoint}})
	if err == nil && r.Usage == nil {
		err = fmt.Errorf("guest %s: usage of %s: no usage in the reply", g.Name, endpoint)
	}
	if err != nil {
		return protocol.UsageResponse{}, err
	}
	return *r.Usage, nil
}

// PID is qemu's process ID.
func (g *Guest) PID() int {
	if g.cmd == nil || g.cmd.Process == nil {
		return 0
	}
	return g.cmd.Process.Pid
}

// dyingGrace is how long Close lets a qemu whose control channel already
// failed finish exiting by itself: a killed qemu closes its sockets at
// once and frees the guest's memory after, and its end is a death to
// report, not one cnbench caused.
const dyingGrace = 2 * time.Second

// Close ends the guest: closing the control channel makes the agent power
// it off, and qemu is killed, by its PID, right away, since nothing in the
// guest outlives it; unless a channel into it had failed, when qemu is
// first given dyingGrace to end by itself. The guest's directory goes too.
func (g *Guest) Close() error {
	g.closing.Store(true)
	g.mu.Lock()
	if g.ctl != nil {
		g.ctl.Close()
		g.ctl = nil
	}
	g.mu.Unlock()
	if g.cmd != nil && g.cmd.Process != nil {
		if g.broken.Load() {
			select {
			case <-g.waited:
			case <-time.After(dyingGrace):
			}
		}
		select {
		case <-g.waited:
		default:
			g.killed.Store(true)
			_ = g.cmd.Process.Kill()
			<-g.waited
		}
	}
	if g.dir != "" {
		if err := os.RemoveAll(g.dir); err != nil {
			return fmt.Errorf("remove guest %s's directory: %w", g.Name, err)
		}
	}
	return nil
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.w.(*bytes.Buffer); ok && b.Len() > 16<<10 {
		return len(p), nil
	}
	return l.w.Write(p)
}
