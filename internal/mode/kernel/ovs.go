package kernel

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
	"time"

	"github.com/vishvananda/netlink"

	"cnbench/internal/daemon"
	"cnbench/internal/mode"
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
			return mode.Unsupported("Open vSwitch is not installed: %s is not on PATH (apt-get install openvswitch-switch)", tool)
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
	n        Counter
	switches map[int]*ovsSwitch
}

var _ mode.Mode = (*ovsMode)(nil)

func newOVSMode(t *topo.Topology) mode.Mode {
	return &ovsMode{t: t, n: Counter{}, switches: map[int]*ovsSwitch{}}
}

// Endpoint places an endpoint on host h's Open vSwitch bridge, starting
// the host's daemons first (startOVS).
//
// Equivalent to: ip -n HOST link add v-NAME type veth peer name eth0 netns EP;
// ovs-vsctl --db=unix:D/db.sock add-port br0 v-NAME; ip -n EP addr add
// 198.19.I.N/24 dev eth0; ip -n EP route add default via 198.19.I.254
// (and, on the userspace datapath, ethtool -K v-NAME tx off; ethtool -K eth0 tx off)
func (m *ovsMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	userspace := ovsDatapath() == DatapathUserspace
	if userspace && m.t.Opts.Offloads.TxChecksum == "on" {
		return nil, mode.NotApplicable("the userspace datapath cannot finish offloaded checksums, so %s needs tx_checksum off", OVS)
	}
	sw, ok := m.switches[h.Index]
	if !ok {
		var err error
		if sw, err = startOVS(m.t, h, ovsDatapath()); err != nil {
			return nil, err
		}
		m.switches[h.Index] = sw
	}
	idx, err := m.n.NextWithin(h, model.MaxEndpointsPerHost)
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
	return numberBehind(h, sw.bridge, ep, idx, name)
}

func (m *ovsMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	return Direct(ep, port)
}

var _ mode.Acquainter = (*ovsMode)(nil)

// Acquaint pins a client and its server where they share a subnet behind
// one host, as bridge does.
func (m *ovsMode) Acquaint(client, server *topo.Endpoint) error {
	return acquaintBehindHost(m.t.Family(), client, server)
}

// ovsSwitch is one host's pair of OVS daemons.
type ovsSwitch struct {
	host  *topo.Host
	token netns.Token
	dir   string
	env   []string
	procs []*daemon.Process // in start order
	// bridge is the bridge's internal port, the endpoints' gateway.
	bridge netlink.Link
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
	if err := server.WaitFor(sock, 5*time.Second); err != nil {
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
	// A fixed address, as for a Linux bridge (createBridge): OVS gives the
	// internal port its lowest port's otherwise.
	mac, err := randomMAC()
	if err != nil {
		return nil, err
	}
	args := []string{"add-br", ovsBridge, "--", "set", "bridge", ovsBridge, "datapath_type=" + dp,
		"other-config:hwaddr=" + strconv.Quote(mac.String())}
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
	sw.bridge = br
	return sw, holdGateway(t.Family(), h, br)
}

// run runs an OVS tool to completion in the calling namespace.
func (sw *ovsSwitch) run(tool string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Env = append(os.Environ(), sw.env...)
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

// start forks a daemon inside the host's namespace (package daemon).
func (sw *ovsSwitch) start(tool string, args ...string) (*daemon.Process, error) {
	p, err := daemon.Start(daemon.Spec{
		Name: tool, NS: sw.host.NS, Token: sw.token, Record: sw.recordName(tool),
		Dir: sw.dir, Log: filepath.Join(sw.dir, tool+".stderr"), Args: append([]string{tool}, args...), Env: sw.env,
	})
	if p != nil {
		sw.procs = append(sw.procs, p)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (sw *ovsSwitch) recordName(tool string) string { return sw.host.Name + "-" + tool }

// stop ends the daemons, newest first, by their PIDs: SIGTERM lets them
// remove their sockets and, on the kernel datapath, their datapath; SIGKILL
// follows if one has not ended within two seconds. Then the private
// directory goes.
func (sw *ovsSwitch) stop() error {
	errs := []error{daemon.StopAll(sw.procs, 2*time.Second)}
	sw.procs = nil
	if err := os.RemoveAll(sw.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove ovs directory %s: %w", sw.dir, err))
	}
	return errors.Join(errs...)
}
