package mode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"cnbench/internal/cleanup"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// OVS is a veth pair per endpoint whose host side is a port of an Open
// vSwitch bridge on the host; the bridge's internal port holds the
// endpoints' gateway, as in bridge mode.
//
// Each host runs an ovsdb-server and an ovs-vswitchd of its own, started
// by cnbench inside the host's namespace with a private directory for
// their database, sockets and logs. The daemons therefore see only that
// host's links, and share nothing with another run's daemons or the
// machine's own Open vSwitch, which cnbench never talks to. They are
// stopped and their directory removed when the topology closes.
//
// The datapath is the kernel's ("system") when the openvswitch module can
// be loaded, and otherwise the userspace one ("netdev"), which reads and
// writes the ports through packet sockets. The userspace datapath cannot
// finish checksums that a veth left to offload, so tx checksum offload is
// turned off on both ends of every veth it switches.
const OVS = "ovs"

// ovsTools are the programs the mode runs.
var ovsTools = []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl"}

const ovsBridge = "br0"

// Datapaths of Open vSwitch, as ovs-vsctl names them.
const (
	DatapathKernel    = "system"
	DatapathUserspace = "netdev"
)

var (
	datapathOnce sync.Once
	datapath     string
)

// ovsDatapath is the datapath this machine gives OVS. Asking the kernel
// for the openvswitch generic-netlink family loads the module if it can.
func ovsDatapath() string {
	datapathOnce.Do(func() {
		datapath = DatapathUserspace
		if _, err := netlink.GenlFamilyGet("ovs_datapath"); err == nil {
			datapath = DatapathKernel
		}
	})
	return datapath
}

func ovsAvailable() error {
	for _, tool := range ovsTools {
		if _, err := exec.LookPath(tool); err != nil {
			return unsupported("Open vSwitch is not installed: %s is not on PATH (apt-get install openvswitch-switch)", tool)
		}
	}
	return nil
}

func ovsRecord(p *model.Params) {
	if ovsAvailable() == nil {
		p.Datapath = ovsDatapath()
	}
}

type ovsMode struct {
	t        *topo.Topology
	n        counter
	switches map[int]*ovsSwitch
}

var _ Mode = (*ovsMode)(nil)

func newOVSMode(t *topo.Topology) Mode {
	return &ovsMode{t: t, n: counter{}, switches: map[int]*ovsSwitch{}}
}

func (m *ovsMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	userspace := ovsDatapath() == DatapathUserspace
	if userspace && m.t.Opts.Offloads.TxChecksum == "on" {
		return nil, notApplicable("the userspace datapath cannot finish offloaded checksums, so %s needs tx_checksum off", OVS)
	}
	sw, ok := m.switches[h.Index]
	if !ok {
		var err error
		if sw, err = startOVS(m.t, h, ovsDatapath()); err != nil {
			return nil, err
		}
		m.switches[h.Index] = sw
	}
	idx, err := m.n.next(h)
	if err != nil {
		return nil, err
	}
	ep, err := newEndpointNS(m.t, name)
	if err != nil {
		return nil, err
	}
	hostSide := "v-" + name
	if _, err := vethInto(h, ep, hostSide, m.t.MTU()); err != nil {
		return nil, err
	}
	if userspace {
		off := topo.Offloads{TxChecksum: "off"}
		if err := errors.Join(topo.SetOffloads(h.NS, off, hostSide), topo.SetOffloads(ep.ns, off, endpointIfName)); err != nil {
			return nil, err
		}
	}
	if err := sw.vsctl("add-port", ovsBridge, hostSide); err != nil {
		return nil, err
	}
	addr := topo.EndpointAddr(h.Index, idx)
	subnet := topo.EndpointSubnet(h.Index)
	if err := configureEndpoint(ep, netip.PrefixFrom(addr, subnet.Bits()), topo.Gateway(h.Index)); err != nil {
		return nil, err
	}
	return &topo.Endpoint{Name: name, Host: h, NS: ep.ns, Addr: addr}, nil
}

func (m *ovsMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	return direct(ep, port)
}

// ovsSwitch is one host's pair of OVS daemons.
type ovsSwitch struct {
	host  *topo.Host
	token netns.Token
	dir   string
	env   []string
	procs []*daemon // in start order
}

// startOVS starts host h's daemons and creates its bridge, registering
// their stop with the topology first, so that a failure half-way still
// stops what was started.
//
// Equivalent to, with D a fresh private directory and OVS_RUNDIR,
// OVS_LOGDIR, OVS_DBDIR and OVS_SYSCONFDIR set to it:
//
//	ovsdb-tool create D/conf.db
//	ip netns exec HOST ovsdb-server D/conf.db --remote=punix:D/db.sock ...
//	ovs-vsctl --db=unix:D/db.sock --no-wait init
//	ip netns exec HOST ovs-vswitchd unix:D/db.sock ...
//	ovs-vsctl --db=unix:D/db.sock add-br br0 -- set bridge br0 datapath_type=DP
//	ip -n HOST addr add 198.19.I.254/24 dev br0; ip -n HOST link set br0 up
func startOVS(t *topo.Topology, h *topo.Host, dp string) (*ovsSwitch, error) {
	dir, err := os.MkdirTemp("", t.Token.Name("ovs-"+h.Name)+"-")
	if err != nil {
		return nil, fmt.Errorf("ovs directory for %q: %w", h.NS.Name, err)
	}
	sw := &ovsSwitch{host: h, token: t.Token, dir: dir}
	for _, v := range []string{"OVS_RUNDIR", "OVS_LOGDIR", "OVS_DBDIR", "OVS_SYSCONFDIR"} {
		sw.env = append(sw.env, v+"="+dir)
	}
	sw.env = append(os.Environ(), sw.env...)
	t.OnClose(sw.stop)

	db := filepath.Join(dir, "conf.db")
	if err := sw.run("ovsdb-tool", "create", db); err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "db.sock")
	server, err := sw.start("ovsdb-server", db, "--remote=punix:"+sock,
		"--unixctl="+filepath.Join(dir, "ovsdb-server.ctl"), "--log-file="+filepath.Join(dir, "ovsdb-server.log"),
		"--no-chdir", "-vconsole:err")
	if err != nil {
		return nil, err
	}
	if err := server.waitFor(sock, 5*time.Second); err != nil {
		return nil, err
	}
	if err := sw.vsctl("--no-wait", "init"); err != nil {
		return nil, err
	}
	if _, err := sw.start("ovs-vswitchd", "unix:"+sock,
		"--unixctl="+filepath.Join(dir, "ovs-vswitchd.ctl"), "--log-file="+filepath.Join(dir, "ovs-vswitchd.log"),
		"--no-chdir", "-vconsole:err"); err != nil {
		return nil, err
	}
	// Without --no-wait, ovs-vsctl returns once ovs-vswitchd has built the
	// bridge, so its internal port exists from here on.
	args := []string{"add-br", ovsBridge, "--", "set", "bridge", ovsBridge, "datapath_type=" + dp}
	if mtu := t.MTU(); mtu != 1500 {
		args = append(args, "--", "set", "interface", ovsBridge, "mtu_request="+strconv.Itoa(mtu))
	}
	if err := sw.vsctl(args...); err != nil {
		return nil, err
	}
	br, err := h.Handle.LinkByName(ovsBridge)
	if err != nil {
		return nil, fmt.Errorf("find the ovs bridge's port %s in %q: %w", ovsBridge, h.NS.Name, err)
	}
	return sw, holdGateway(h, br)
}

// run runs an OVS tool to completion in the calling namespace.
func (sw *ovsSwitch) run(tool string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Env = sw.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s for %q: %w: %s", tool, strings.Join(args, " "), sw.host.NS.Name, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// vsctl talks to this switch's database, and to no other.
func (sw *ovsSwitch) vsctl(args ...string) error {
	return sw.run("ovs-vsctl", append([]string{"--db=unix:" + filepath.Join(sw.dir, "db.sock"), "--timeout=10"}, args...)...)
}

// daemon is an OVS daemon cnbench started.
type daemon struct {
	name   string
	cmd    *exec.Cmd
	stderr *lockedWriter
	waited <-chan struct{}
}

// start forks a daemon from a thread inside the host's namespace, so it
// is born there, and records it so that a sweep can end it should the
// run die without stopping it. The parent-death signal ends it in most
// such cases anyway.
func (sw *ovsSwitch) start(tool string, args ...string) (*daemon, error) {
	d := &daemon{name: tool, cmd: exec.Command(tool, args...), stderr: &lockedWriter{}}
	d.cmd.Env = sw.env
	d.cmd.Stderr = d.stderr
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	waited, err := cleanup.StartDaemon(sw.host.NS, d.cmd, sw.token, sw.recordName(tool), sw.dir)
	if waited == nil {
		return nil, err
	}
	d.waited = waited
	sw.procs = append(sw.procs, d)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (sw *ovsSwitch) recordName(tool string) string { return sw.host.Name + "-" + tool }

// waitFor waits until path exists, or the daemon has exited.
func (d *daemon) waitFor(path string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-d.waited:
			return fmt.Errorf("%s exited before creating %s: %s", d.name, path, strings.TrimSpace(d.stderr.String()))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not create %s within %v", d.name, path, limit)
		}
	}
}

// stop ends the daemons, newest first, by their PIDs: SIGTERM lets them
// remove their sockets and, on the kernel datapath, their datapath; SIGKILL
// follows if one has not ended within two seconds. Then the private
// directory goes.
func (sw *ovsSwitch) stop() error {
	var errs []error
	for i := len(sw.procs) - 1; i >= 0; i-- {
		d := sw.procs[i]
		cleanup.StopDaemon(d.cmd.Process, d.waited, 2*time.Second)
		errs = append(errs, cleanup.ForgetDaemon(sw.token, sw.recordName(d.name)))
	}
	sw.procs = nil
	if err := os.RemoveAll(sw.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove ovs directory %s: %w", sw.dir, err))
	}
	return errors.Join(errs...)
}

// lockedWriter lets a daemon's output be written by exec's copying
// goroutine while waitFor reads it.
type lockedWriter struct {
	mu sync.Mutex
	w  bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}
