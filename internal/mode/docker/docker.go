package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"time"

	dockerd "cnbench/internal/docker"
	"cnbench/internal/mode"
	"cnbench/internal/mode/kernel"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// Docker modes measure what Docker itself builds. Each emulated host runs
// a private containerd and dockerd of cnbench's, inside the host's
// namespace (see package internal/docker), so docker0, the containers' veths and
// Docker's iptables rules all live there. Endpoints are containers of
// cnbench's own image; the engines are started inside each container's
// network namespace, found from its PID, by the same machinery and in the
// same cgroups as in every other mode, so only the network differs.
const (
	DockerBridge     = "docker:bridge"      // the default bridge, docker0
	DockerUserBridge = "docker:user-bridge" // a user-defined bridge network
	DockerHost       = "docker:host"        // --network host
	DockerMacvlan    = "docker:macvlan"     // macvlan network on the host's NIC
	DockerIPVlan     = "docker:ipvlan"      // ipvlan (l2) network on the host's NIC
	DockerPublish    = "docker:publish"     // docker0 with -p: iptables DNAT and docker-proxy
	DockerLink       = "docker:link"        // docker0 with --icc=false and a legacy --link
)

// dockerNetwork is the user-defined network's name in each private daemon,
// and dockerBridgeName the Linux bridge a user-defined bridge network gets.
const (
	dockerNetwork    = "cnb-net"
	dockerBridgeName = "cnb-br0"
)

// Rows are the docker family's rows of the mode table.
var Rows = []mode.Descriptor{
	row(DockerBridge, "Docker's default bridge docker0, from a private dockerd in the host", topo.SubnetAddresses),
	row(DockerUserBridge, "a user-defined Docker bridge network (docker network create)", topo.SubnetAddresses),
	row(DockerHost, "Docker host networking: the container shares the host's namespace", topo.HostAddresses),
	row(DockerMacvlan, "a Docker macvlan network on the host's NIC", topo.WireAddresses),
	row(DockerIPVlan, "a Docker ipvlan (l2) network on the host's NIC", topo.WireAddresses),
	row(DockerPublish, "docker0 with the server's ports published (docker run -p): iptables DNAT and docker-proxy", topo.SubnetAddresses),
	withSupports(row(DockerLink, "docker0 with inter-container traffic off and a legacy --link opening the server's ports", topo.SubnetAddresses), linkSupports),
}

// row is a docker: mode's row. Every one but docker:host creates a
// bridge in the host (docker0, or the user-defined network's).
func row(name, summary string, addrs topo.Addressing) mode.Descriptor {
	d := mode.Descriptor{
		Name: name, Summary: summary, Family: mode.Docker,
		Available: func() error { return dockerAvailable(name) },
		Record:    func(p *model.Params) { dockerRecord(name, p) },
		New: func(t *topo.Topology) mode.Mode {
			return &dockerMode{t: t, name: name, n: kernel.Counter{}, daemons: map[int]*dockerd.Daemon{}}
		},
		Addresses: addrs,
	}
	if name != DockerHost {
		d.Uncounted = []string{"bridge"}
	}
	return d
}

func withSupports(d mode.Descriptor, supports func(topology string) error) mode.Descriptor {
	d.Supports = supports
	return d
}

// linkSupports: links join containers of one daemon, so both endpoints
// must be on one host.
func linkSupports(topology string) error {
	if topology != topo.CHC {
		return mode.NotApplicable("links join containers of one daemon, and %s puts them on different hosts", topology)
	}
	return nil
}

var (
	dockerProbeOnce sync.Once
	dockerProbeErr  error
	dockerVersion   string
)

// dockerAvailable checks the programs, then starts a private daemon once
// in a scratch namespace: the only honest test that Docker runs here.
func dockerAvailable(name string) error {
	for _, p := range dockerd.Programs {
		if _, err := exec.LookPath(p); err != nil {
			return mode.Unsupported("%s is not on PATH (apt-get install dockerd.io)", p)
		}
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return mode.Unsupported("iptables is not on PATH, and dockerd needs it (apt-get install iptables)")
	}
	dockerProbeOnce.Do(func() { dockerVersion, dockerProbeErr = probeDocker() })
	if dockerProbeErr != nil {
		return dockerProbeErr
	}
	switch name {
	case DockerMacvlan:
		return kernel.LinkAvailable(kernel.Macvlan)
	case DockerIPVlan:
		return kernel.LinkAvailable(kernel.IPVlan)
	}
	return nil
}

func probeDocker() (version string, err error) {
	t, err := topo.Scratch(netns.NewToken())
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, t.Close()) }()
	ns, _, err := t.NewNamespace("dkprobe")
	if err != nil {
		return "", err
	}
	d, err := dockerd.Start(ns, t.Token, "probe", dockerd.Config{Bip: netip.MustParsePrefix("198.19.1.254/24")})
	if err != nil {
		return "", mode.Unsupported("a private dockerd does not start here: %v", err)
	}
	defer func() { err = errors.Join(err, d.Stop()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := d.Client.ServerVersion(ctx)
	if err != nil {
		return "", mode.Unsupported("the private dockerd does not answer: %v", err)
	}
	return v.Version + " (API " + v.APIVersion + ")", nil
}

// dockerRecord stores the daemon's version and what the mode asks of it.
func dockerRecord(name string, p *model.Params) {
	if dockerAvailable(name) != nil {
		return
	}
	bip := "--bip=198.19.I.254/24"
	if b := dockerBip(name, 1); b.Addr() != topo.Gateway(1) {
		bip = "--bip=198.19.(100+I).254/24"
	}
	cfg := map[string]any{"dockerd": dockerVersion, "daemon": "private, one per emulated host", "flags": []string{bip}}
	switch name {
	case DockerBridge:
		cfg["network"] = "bridge (docker0)"
	case DockerUserBridge:
		cfg["network"] = map[string]string{"driver": "bridge", "subnet": "198.19.I.0/24", "gateway": "198.19.I.254", "com.dockerd.network.bridge.name": dockerBridgeName}
	case DockerHost:
		cfg["network"] = "host"
	case DockerMacvlan, DockerIPVlan:
		driver := map[string]string{DockerMacvlan: "macvlan", DockerIPVlan: "ipvlan"}[name]
		cfg["network"] = map[string]string{"driver": driver, "parent": topo.NICName, "subnet": "the host's segment"}
	case DockerPublish:
		cfg["network"] = "bridge (docker0)"
		cfg["publish"] = "HOST_ADDR:PORT:PORT/tcp and /udp on the server"
	case DockerLink:
		cfg["network"] = "bridge (docker0)"
		cfg["flags"] = []string{bip, "--icc=false"}
		cfg["link"] = "client --link server; server --expose PORT"
	}
	data, _ := json.Marshal(cfg)
	p.ModeConfig = string(data)
}

type dockerMode struct {
	t       *topo.Topology
	name    string
	n       kernel.Counter
	daemons map[int]*dockerd.Daemon
	started bool
	// ports are the server's, known before it exists (Publisher).
	ports []int
	// server is the first endpoint's container, which links point at.
	server *dockerd.Container
}

var (
	_ mode.Mode      = (*dockerMode)(nil)
	_ mode.Publisher = (*dockerMode)(nil)
)

func (m *dockerMode) Publish(ports ...int) { m.ports = append(m.ports, ports...) }

// dockerBip is docker0's address on host i: the host's endpoint subnet
// when the endpoints sit on docker0, as in cnbench's bridge mode, and
// 198.19.(100+i).254/24 otherwise, out of the way of the user-defined
// network that takes the endpoint subnet.
func dockerBip(name string, i int) netip.Prefix {
	switch name {
	case DockerBridge, DockerPublish, DockerLink:
		return netip.PrefixFrom(topo.Gateway(i), topo.EndpointSubnet(i).Bits())
	}
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, byte(100 + i), 254}), 24)
}

// daemon returns host h's private daemon. The first call starts one on
// every host of the topology at once, each with cnbench's image and the
// mode's network, so a two-host case waits for one start, not two; the
// topology stops them, all at once too, when it closes, after every
// container is gone.
func (m *dockerMode) daemon(h *topo.Host) (*dockerd.Daemon, error) {
	if !m.started {
		m.started = true
		if err := m.startDaemons(); err != nil {
			return nil, err
		}
	}
	d, ok := m.daemons[h.Index]
	if !ok {
		return nil, fmt.Errorf("no dockerd on host %s", h.Name)
	}
	return d, nil
}

func (m *dockerMode) startDaemons() error {
	hosts := m.t.Hosts
	started := make([]*dockerd.Daemon, len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() { started[i], errs[i] = m.startDaemon(h) })
	}
	wg.Wait()
	var ds []*dockerd.Daemon
	for i, d := range started {
		if d != nil {
			m.daemons[hosts[i].Index] = d
			ds = append(ds, d)
		}
	}
	m.t.OnClose(func() error {
		stopErrs := make([]error, len(ds))
		var wg sync.WaitGroup
		for i, d := range ds {
			wg.Go(func() { stopErrs[i] = d.Stop() })
		}
		wg.Wait()
		return errors.Join(stopErrs...)
	})
	return errors.Join(errs...)
}

// startDaemon starts host h's daemon and prepares it for the mode. On an
// error after the start it returns the daemon too, for the topology to
// stop.
func (m *dockerMode) startDaemon(h *topo.Host) (*dockerd.Daemon, error) {
	cfg := dockerd.Config{
		Bip:   dockerBip(m.name, h.Index),
		MTU:   m.t.MTU(),
		NoICC: m.name == DockerLink,
	}
	d, err := dockerd.Start(h.NS, m.t.Token, h.Name, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := d.EnsureImage(ctx); err != nil {
		return d, err
	}
	switch m.name {
	case DockerUserBridge:
		err = d.CreateNetwork(ctx, dockerd.NetworkSpec{
			Name: dockerNetwork, Driver: "bridge", Token: string(m.t.Token),
			Subnet: topo.EndpointSubnet(h.Index), Gateway: topo.Gateway(h.Index),
			Options: map[string]string{"com.dockerd.network.bridge.name": dockerBridgeName, "com.dockerd.network.driver.mtu": strconv.Itoa(m.t.MTU())},
		})
	case DockerMacvlan, DockerIPVlan:
		gw := h.Router
		if !gw.IsValid() {
			gw = h.Addr
		}
		spec := dockerd.NetworkSpec{Name: dockerNetwork, Subnet: h.Segment, Gateway: gw, Token: string(m.t.Token), Options: map[string]string{"parent": topo.NICName}}
		if m.name == DockerMacvlan {
			spec.Driver, spec.Options["macvlan_mode"] = "macvlan", "bridge"
		} else {
			spec.Driver, spec.Options["ipvlan_mode"] = "ipvlan", "l2"
		}
		err = d.CreateNetwork(ctx, spec)
	}
	if err != nil {
		return d, err
	}
	// Docker's FORWARD policy drops connections from other machines into
	// its bridges; a machine that routes its container subnet to the LAN
	// opens it in DOCKER-USER, the chain Docker leaves to its users.
	if len(m.t.Hosts) > 1 && (m.name == DockerBridge || m.name == DockerUserBridge) {
		bridge := map[bool]string{true: "docker0", false: dockerBridgeName}[m.name == DockerBridge]
		if err := d.Iptables("-I", "DOCKER-USER", "-i", topo.NICName, "-o", bridge, "-j", "ACCEPT"); err != nil {
			return d, err
		}
	}
	return d, nil
}

// Endpoint runs a container on host h's daemon and names its network
// namespace cnb-TOKEN-NAME, where the runner starts the engines.
//
// Equivalent to: docker run -d --name cnb-TOKEN-NAME --network NET ...
// cnbench:VERSION; ip netns attach cnb-TOKEN-NAME PID
func (m *dockerMode) Endpoint(h *topo.Host, name string) (*topo.Endpoint, error) {
	d, err := m.daemon(h)
	if err != nil {
		return nil, err
	}
	idx, err := m.n.Next(h)
	if err != nil {
		return nil, err
	}
	spec := dockerd.ContainerSpec{Name: m.t.Token.Name(name), Network: "bridge", Token: string(m.t.Token)}
	first := m.server == nil
	switch m.name {
	case DockerHost:
		spec.Network = "host"
	case DockerUserBridge:
		spec.Network, spec.IP = dockerNetwork, topo.EndpointAddr(h.Index, idx)
	case DockerMacvlan, DockerIPVlan:
		spec.Network, spec.IP = dockerNetwork, topo.WireAddr(h.Index, idx)
	case DockerPublish:
		if first {
			spec.Publish, spec.HostIP = m.ports, h.Addr
		}
	case DockerLink:
		if first {
			spec.Expose = m.ports
		} else {
			spec.Links = []string{m.server.Name + ":server"}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := d.Run(ctx, spec)
	if err != nil {
		return nil, err
	}
	m.t.OnClose(func() error { return d.Remove(c) })
	if first {
		m.server = c
	}
	if m.name == DockerHost {
		return &topo.Endpoint{Name: name, Host: h, NS: h.NS, Addr: h.Addr}, nil
	}
	if !c.Addr.IsValid() {
		return nil, fmt.Errorf("container %s in %q has no address", c.Name, h.NS.Name)
	}
	ns, err := netns.Attach(m.t.Token.Name(name), c.PID)
	if err != nil {
		return nil, err
	}
	if _, err := m.t.Adopt(ns); err != nil {
		return nil, err
	}
	return &topo.Endpoint{Name: name, Host: h, NS: ns, Addr: c.Addr}, nil
}

// Expose gives the server's published address in docker:publish, and the
// container's own elsewhere.
func (m *dockerMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	if m.name != DockerPublish {
		return kernel.Direct(ep, port)
	}
	if !slices.Contains(m.ports, port) {
		return netip.AddrPort{}, fmt.Errorf("expose port %d: %s publishes only ports %v, fixed when the container was created", port, m.name, m.ports)
	}
	return netip.AddrPortFrom(ep.Host.Addr, uint16(port)), nil
}

// DaemonVersion is the version of the private dockerd the docker: modes
// run, or why there is none.
func DaemonVersion() (string, error) {
	if err := dockerAvailable(DockerBridge); err != nil {
		return "", err
	}
	return dockerVersion, nil
}
