package docker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"
)

// ContainerSpec is one container to run.
type ContainerSpec struct {
	// Name is the container's name, and its host name.
	Name string
	// Network is "bridge" (docker0), "host", or the name of a network
	// made with CreateNetwork.
	Network string
	// IP is a fixed address on a user-defined network; zero lets the
	// daemon choose.
	IP netip.Addr
	// Publish maps these ports, TCP and UDP, from HostIP on the daemon's
	// host to the same ports of the container (docker run -p).
	Publish []int
	HostIP  netip.Addr
	// Expose declares ports without publishing them (docker run --expose),
	// which is what a link opens when inter-container traffic is off.
	Expose []int
	// Links are legacy links to other containers (docker run --link).
	Links []string
	// Token labels the container as its run's.
	Token string
}

// Container is a running container.
type Container struct {
	ID   string
	Name string
	// PID is the container's main process, whose namespaces are the
	// container's.
	PID int
	// Addr is the container's address on its network; invalid with host
	// networking.
	Addr netip.Addr
}

// Run creates and starts a container of cnbench's image.
//
// Equivalent to: docker run -d --name NAME --network NET [--ip IP]
// [-p HOSTIP:P:P/tcp -p HOSTIP:P:P/udp] [--expose P] [--link L]
// --label cnbench.token=TOKEN cnbench:VERSION sleep infinity
func (d *Daemon) Run(ctx context.Context, s ContainerSpec) (*Container, error) {
	img, err := d.EnsureImage(ctx)
	if err != nil {
		return nil, err
	}
	ports := nat.PortSet{}
	bindings := nat.PortMap{}
	for _, p := range append(append([]int(nil), s.Expose...), s.Publish...) {
		for _, proto := range []string{"tcp", "udp"} {
			ports[nat.Port(strconv.Itoa(p)+"/"+proto)] = struct{}{}
		}
	}
	for _, p := range s.Publish {
		for _, proto := range []string{"tcp", "udp"} {
			hostIP := ""
			if s.HostIP.IsValid() {
				hostIP = s.HostIP.String()
			}
			bindings[nat.Port(strconv.Itoa(p)+"/"+proto)] = []nat.PortBinding{{HostIP: hostIP, HostPort: strconv.Itoa(p)}}
		}
	}
	cfg := &container.Config{
		Image:        img,
		Cmd:          EndpointImage.Command(),
		Env:          EndpointImage.Env,
		Hostname:     s.Name,
		ExposedPorts: ports,
		Labels:       map[string]string{TokenLabel: s.Token},
	}
	if s.Network == "host" {
		cfg.Hostname = ""
	}
	host := &container.HostConfig{
		NetworkMode:  container.NetworkMode(s.Network),
		PortBindings: bindings,
		Links:        s.Links,
	}
	var netCfg *network.NetworkingConfig
	if s.IP.IsValid() {
		netCfg = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			s.Network: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: s.IP.String()}},
		}}
	}
	created, err := d.Client.ContainerCreate(ctx, cfg, host, netCfg, nil, s.Name)
	if err != nil {
		return nil, fmt.Errorf("create container %s in %q: %w", s.Name, d.NS.Name, err)
	}
	c := &Container{ID: created.ID, Name: s.Name}
	if err := d.Client.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return nil, errors.Join(fmt.Errorf("start container %s in %q: %w", s.Name, d.NS.Name, err), d.Remove(c))
	}
	info, err := d.Client.ContainerInspect(ctx, created.ID)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("inspect container %s in %q: %w", s.Name, d.NS.Name, err), d.Remove(c))
	}
	if info.State == nil || !info.State.Running || info.State.Pid == 0 {
		return nil, errors.Join(fmt.Errorf("container %s in %q is not running", s.Name, d.NS.Name), d.Remove(c))
	}
	c.PID = info.State.Pid
	if ns := info.NetworkSettings; ns != nil {
		for _, ep := range ns.Networks {
			if a, err := netip.ParseAddr(ep.IPAddress); err == nil {
				c.Addr = a
			}
		}
	}
	return c, nil
}

// Remove removes a container, running or not.
//
// Equivalent to: docker rm -f NAME
func (d *Daemon) Remove(c *Container) error {
	if d.Client == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Client.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
		return fmt.Errorf("remove container %s in %q: %w", c.Name, d.NS.Name, err)
	}
	return nil
}

// NetworkSpec is a user-defined network.
type NetworkSpec struct {
	Name, Driver string
	Subnet       netip.Prefix
	Gateway      netip.Addr
	// Options are the driver's (-o), such as the bridge's name or the
	// macvlan's parent.
	Options map[string]string
	Token   string
}

// CreateNetwork makes a user-defined network.
//
// Equivalent to: docker network create -d DRIVER --subnet SUBNET
// --gateway GW -o K=V --label cnbench.token=TOKEN NAME
func (d *Daemon) CreateNetwork(ctx context.Context, s NetworkSpec) error {
	opts := network.CreateOptions{
		Driver:  s.Driver,
		Options: s.Options,
		Labels:  map[string]string{TokenLabel: s.Token},
		IPAM: &network.IPAM{Config: []network.IPAMConfig{{
			Subnet:  s.Subnet.String(),
			Gateway: s.Gateway.String(),
		}}},
	}
	if _, err := d.Client.NetworkCreate(ctx, s.Name, opts); err != nil {
		return fmt.Errorf("create %s network %s in %q: %w", s.Driver, s.Name, d.NS.Name, err)
	}
	return nil
}
