// Package swarm deploys cnbench's engines on the nodes of an existing
// Docker Swarm, through a manager's Engine API only, and tears them down.
//
// Each endpoint is a one-replica service of cnbench's image pinned to a
// chosen node, on the case's network: an overlay network cnbench creates
// (VXLAN between nodes) or the nodes' host network, the baseline. The
// service's container runs `cnbench agent --container`, which offers the
// container itself as the endpoint to the controller over mutual TLS with
// a certificate authority made for the case alone and handed over as
// Docker secrets; its control port is published on the node in host mode
// (iptables, no routing mesh), so the controller reaches it at the node's
// address. Services use DNS round-robin endpoints, never virtual IPs:
// those need IPVS, which some kernels lack, and cnbench dials task
// addresses anyway. Everything carries the label cnbench.token and the
// case's name prefix, and Remove takes all of it away.
package swarm

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/swarm"
	"github.com/docker/docker/client"

	"cnbench/internal/agent"
	"cnbench/internal/cluster"
	"cnbench/internal/mode"
	"cnbench/internal/netns"
)

// TokenLabel marks every service, secret and network cnbench creates
// with its run's token.
const TokenLabel = "cnbench.token"

// Drivers are the networks a swarm mode can put its endpoints on.
const (
	DriverOverlay = "overlay" // a VXLAN overlay network cnbench creates
	DriverHost    = "host"    // the nodes' own network, the baseline
)

// Config is where the swarm is and which nodes to use; Image names an
// image present on every node.
type Config = cluster.Swarm

// DefaultControlPort is the first agent port on the nodes.
const DefaultControlPort = 7441

// Node is a swarm node cnbench uses.
type Node struct {
	ID   string
	Name string // host name, with the ID's start where two share one
	Addr netip.Addr
}

// Cluster is a connection to a swarm manager.
type Cluster struct {
	cfg   Config
	cli   *client.Client
	Nodes []Node
	// deployed numbers deployments, so that no name of one is taken by
	// what the manager may still hold of the one before.
	deployed int
}

// Connect opens the manager's API and finds the configured nodes, which
// must be ready.
func Connect(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.ControlPort == 0 {
		cfg.ControlPort = DefaultControlPort
	}
	opts := []client.Opt{client.WithHost(cfg.Manager), client.WithAPIVersionNegotiation()}
	if cfg.CA != "" {
		opts = append(opts, client.WithTLSClientConfig(cfg.CA, cfg.Cert, cfg.Key))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("swarm manager %s: %w", cfg.Manager, err)
	}
	c := &Cluster{cfg: cfg, cli: cli}
	if err := c.findNodes(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	return c, nil
}

// Close drops the connection to the manager.
func (c *Cluster) Close() error { return c.cli.Close() }

func (c *Cluster) findNodes(ctx context.Context) error {
	info, err := c.cli.Info(ctx)
	if err != nil {
		return fmt.Errorf("swarm manager %s: %w", c.cfg.Manager, err)
	}
	if !info.Swarm.ControlAvailable {
		return fmt.Errorf("swarm manager %s: this Docker Engine is not a swarm manager (swarm state %q)", c.cfg.Manager, info.Swarm.LocalNodeState)
	}
	nodes, err := c.cli.NodeList(ctx, swarm.NodeListOptions{})
	if err != nil {
		return fmt.Errorf("swarm manager %s: list nodes: %w", c.cfg.Manager, err)
	}
	hostnames := map[string]int{}
	for _, n := range nodes {
		hostnames[n.Description.Hostname]++
	}
	for _, want := range c.cfg.Nodes {
		var found *swarm.Node
		for i, n := range nodes {
			if n.ID == want || n.Description.Hostname == want {
				if found != nil {
					return fmt.Errorf("swarm node %q: more than one node has that host name; name it by its ID", want)
				}
				found = &nodes[i]
			}
		}
		if found == nil {
			return fmt.Errorf("swarm node %q: no such node", want)
		}
		if found.Status.State != swarm.NodeStateReady || found.Spec.Availability != swarm.NodeAvailabilityActive {
			return fmt.Errorf("swarm node %q is %s and %s, not ready and active", want, found.Status.State, found.Spec.Availability)
		}
		addr, err := netip.ParseAddr(found.Status.Addr)
		if err != nil {
			return fmt.Errorf("swarm node %q: address %q: %w", want, found.Status.Addr, err)
		}
		name := found.Description.Hostname
		if hostnames[name] > 1 {
			name += "/" + found.ID[:min(12, len(found.ID))]
		}
		c.Nodes = append(c.Nodes, Node{ID: found.ID, Name: name, Addr: addr})
	}
	if len(c.Nodes) == 0 {
		return errors.New("swarm: name at least one node")
	}
	return nil
}

// Deployment is what Deploy created for one case.
type Deployment struct {
	c        *Cluster
	pki      *agent.Ephemeral
	eps      []cluster.Endpoint
	services []string
	secrets  []string
	network  string // created by cnbench; empty for the host network
}

var _ cluster.Cluster = (*Cluster)(nil)
var _ cluster.Deployment = (*Deployment)(nil)

// Endpoints are the deployed engine services; each one's agent answers
// at its node's address on its published port.
func (d *Deployment) Endpoints() []cluster.Endpoint { return d.eps }

// ClientTLS trusts the agents of this deployment and no one else.
func (d *Deployment) ClientTLS(serverName string) *tls.Config { return d.pki.ClientTLS(serverName) }

// Deploy starts one engine service per role on a network of driver, the
// servers' on the first configured node and the others on the second
// unless sameNode, and waits until each runs.
func (c *Cluster) Deploy(ctx context.Context, tok netns.Token, driver string, roles []string, servers int, sameNode bool) (_ cluster.Deployment, err error) {
	if driver != DriverOverlay && driver != DriverHost {
		return nil, fmt.Errorf("%w: swarm network driver %q: cnbench builds %s and %s", mode.ErrUnsupported, driver, DriverOverlay, DriverHost)
	}
	nodes := make([]int, len(roles))
	if !sameNode {
		if len(c.Nodes) < 2 {
			return nil, fmt.Errorf("%w: endpoints on two nodes need two in the swarm section", mode.ErrUnsupported)
		}
		for i := servers; i < len(nodes); i++ {
			nodes[i] = 1
		}
	}
	d := &Deployment{c: c}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Remove())
		}
	}()
	var hosts []string
	for _, n := range c.Nodes {
		hosts = append(hosts, n.Addr.String())
	}
	if d.pki, err = agent.NewEphemeral(hosts); err != nil {
		return nil, fmt.Errorf("swarm: certificates for the case: %w", err)
	}
	labels := map[string]string{TokenLabel: string(tok)}
	c.deployed++
	seq := strconv.Itoa(c.deployed)
	netTarget := "host"
	if driver == DriverOverlay {
		name := tok.Name("ov" + seq)
		// Equivalent to: docker network create -d overlay --label cnbench.token=TOKEN cnb-TOKEN-ov
		resp, err := c.cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "overlay", Scope: "swarm", Labels: labels})
		if err != nil {
			return nil, fmt.Errorf("swarm: create overlay network %s: %w", name, err)
		}
		d.network, netTarget = resp.ID, resp.ID
	}
	var refs []*swarm.SecretReference
	for _, f := range []struct {
		file string
		data []byte
	}{{"ca.pem", d.pki.CA}, {"agent.pem", d.pki.Cert}, {"agent-key.pem", d.pki.Key}} {
		name := tok.Name(strings.TrimSuffix(f.file, ".pem") + seq)
		resp, err := c.cli.SecretCreate(ctx, swarm.SecretSpec{Annotations: swarm.Annotations{Name: name, Labels: labels}, Data: f.data})
		if err != nil {
			return nil, fmt.Errorf("swarm: create secret %s: %w", name, err)
		}
		d.secrets = append(d.secrets, resp.ID)
		refs = append(refs, &swarm.SecretReference{SecretID: resp.ID, SecretName: name,
			File: &swarm.SecretReferenceFileTarget{Name: f.file, UID: "0", GID: "0", Mode: 0o400}})
	}
	for i, role := range roles {
		node := c.Nodes[nodes[i]]
		port := cluster.DeployedAt(c.cfg.ControlPort, c.deployed, len(roles), i)
		id, err := c.createService(ctx, tok, role+"-"+seq, node, port, netTarget, driver, refs, labels)
		if err != nil {
			return nil, err
		}
		d.services = append(d.services, id)
		addr, err := c.waitRunning(ctx, id, d.network, node)
		if err != nil {
			return nil, fmt.Errorf("swarm: service %s: %w", tok.Name(role), err)
		}
		d.eps = append(d.eps, cluster.Endpoint{Role: role, Node: node.Name, Control: netip.AddrPortFrom(node.Addr, uint16(port)),
			ServerName: node.Addr.String(), Addr: addr})
	}
	return d, nil
}

// createService starts an engine service pinned to node.
//
// Equivalent to:
//
//	docker service create --name cnb-TOKEN-ROLE --constraint node.id==NODE \
//	    --network NET --endpoint-mode dnsrr --restart-condition none \
//	    --publish mode=host,target=PORT,published=PORT \
//	    --secret ... IMAGE /cnbench agent --container --listen :PORT ...
func (c *Cluster) createService(ctx context.Context, tok netns.Token, role string, node Node, port int, netTarget, driver string, refs []*swarm.SecretReference, labels map[string]string) (string, error) {
	one := uint64(1)
	spec := swarm.ServiceSpec{
		Annotations: swarm.Annotations{Name: tok.Name(role), Labels: labels},
		TaskTemplate: swarm.TaskSpec{
			ContainerSpec: &swarm.ContainerSpec{
				Image:  c.cfg.Image,
				Labels: labels,
				Command: []string{"/cnbench", "agent", "--container", "--listen", ":" + strconv.Itoa(port),
					"--ca", "/run/secrets/ca.pem", "--cert", "/run/secrets/agent.pem", "--key", "/run/secrets/agent-key.pem",
					"--timeout", "10s"},
				Secrets: refs,
			},
			Placement:     &swarm.Placement{Constraints: []string{"node.id==" + node.ID}},
			Networks:      []swarm.NetworkAttachmentConfig{{Target: netTarget}},
			RestartPolicy: &swarm.RestartPolicy{Condition: swarm.RestartPolicyConditionNone},
		},
		Mode:         swarm.ServiceMode{Replicated: &swarm.ReplicatedService{Replicas: &one}},
		EndpointSpec: &swarm.EndpointSpec{Mode: swarm.ResolutionModeDNSRR},
	}
	if driver != DriverHost {
		spec.EndpointSpec.Ports = []swarm.PortConfig{{Protocol: swarm.PortConfigProtocolTCP,
			TargetPort: uint32(port), PublishedPort: uint32(port), PublishMode: swarm.PortConfigPublishModeHost}}
	}
	resp, err := c.cli.ServiceCreate(ctx, spec, swarm.ServiceCreateOptions{})
	if err != nil {
		return "", fmt.Errorf("swarm: create service %s on %s: %w", tok.Name(role), node.Name, err)
	}
	return resp.ID, nil
}

// waitRunning waits until the service's task runs and returns its
// address on the case's network (the node's own on the host network).
func (c *Cluster) waitRunning(ctx context.Context, serviceID, networkID string, node Node) (netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		tasks, err := c.cli.TaskList(ctx, swarm.TaskListOptions{Filters: filters.NewArgs(filters.Arg("service", serviceID))})
		if err != nil {
			return netip.Addr{}, err
		}
		for _, t := range tasks {
			switch t.Status.State {
			case swarm.TaskStateRunning:
				if networkID == "" {
					return node.Addr, nil
				}
				for _, na := range t.NetworksAttachments {
					if na.Network.ID != networkID {
						continue
					}
					for _, a := range na.Addresses {
						if p, err := netip.ParsePrefix(a); err == nil {
							return p.Addr(), nil
						}
					}
				}
				return netip.Addr{}, fmt.Errorf("task %s has no address on the case's network", t.ID)
			case swarm.TaskStateFailed, swarm.TaskStateRejected, swarm.TaskStateShutdown, swarm.TaskStateComplete:
				return netip.Addr{}, fmt.Errorf("task %s %s: %s %s", t.ID, t.Status.State, t.Status.Err, t.Status.Message)
			}
		}
		select {
		case <-ctx.Done():
			return netip.Addr{}, fmt.Errorf("not running after 60s: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Remove takes away the deployment's services, waits until their
// containers are gone, then removes its network and secrets. It goes on
// past errors.
func (d *Deployment) Remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := d.c
	var errs []error
	// A removed service's container lives on until its node has stopped
	// it, holding its port and its endpoint on the network, and the
	// manager forgets the task at once. Scaled to zero first, the task
	// stays listed until its node reports the container stopped.
	for _, id := range d.services {
		errs = append(errs, c.scaleToZero(ctx, id))
	}
	for _, id := range d.services {
		if err := c.cli.ServiceRemove(ctx, id); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("swarm: remove service %s: %w", id, err))
		}
	}
	if d.network != "" {
		var err error
		for ctx.Err() == nil {
			if err = c.cli.NetworkRemove(ctx, d.network); err == nil || cerrdefs.IsNotFound(err) {
				err = nil
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("swarm: remove network %s: %w", d.network, err))
		}
	}
	for _, id := range d.secrets {
		if err := c.cli.SecretRemove(ctx, id); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("swarm: remove secret %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// scaleToZero asks for no replicas of a service and waits until every
// task of it has stopped on its node.
//
// Equivalent to: docker service scale ID=0
func (c *Cluster) scaleToZero(ctx context.Context, id string) error {
	svc, _, err := c.cli.ServiceInspectWithRaw(ctx, id, swarm.ServiceInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("swarm: inspect service %s: %w", id, err)
	}
	zero := uint64(0)
	spec := svc.Spec
	spec.Mode.Replicated = &swarm.ReplicatedService{Replicas: &zero}
	if _, err := c.cli.ServiceUpdate(ctx, id, svc.Version, spec, swarm.ServiceUpdateOptions{}); err != nil {
		return fmt.Errorf("swarm: scale service %s to zero: %w", svc.Spec.Name, err)
	}
	for {
		tasks, err := c.cli.TaskList(ctx, swarm.TaskListOptions{Filters: filters.NewArgs(filters.Arg("service", id))})
		if err != nil {
			return fmt.Errorf("swarm: tasks of %s: %w", svc.Spec.Name, err)
		}
		live := 0
		for _, t := range tasks {
			if !stopped(t.Status.State) {
				live++
			}
		}
		if live == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("swarm: %d tasks of %s still run: %w", live, svc.Spec.Name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stopped reports whether a task's container has ended or never started.
func stopped(s swarm.TaskState) bool {
	switch s {
	case swarm.TaskStateShutdown, swarm.TaskStateComplete, swarm.TaskStateFailed, swarm.TaskStateRejected, swarm.TaskStateOrphaned, swarm.TaskStateRemove:
		return true
	}
	return false
}

// Leftovers lists the services, secrets and networks of run tok that
// still exist on the swarm.
func (c *Cluster) Leftovers(ctx context.Context, tok netns.Token) ([]string, error) {
	f := filters.NewArgs(filters.Arg("label", TokenLabel+"="+string(tok)))
	var out []string
	services, err1 := c.cli.ServiceList(ctx, swarm.ServiceListOptions{Filters: f})
	for _, s := range services {
		out = append(out, "service "+s.Spec.Name)
	}
	secrets, err2 := c.cli.SecretList(ctx, swarm.SecretListOptions{Filters: f})
	for _, s := range secrets {
		out = append(out, "secret "+s.Spec.Name)
	}
	networks, err3 := c.cli.NetworkList(ctx, network.ListOptions{Filters: f})
	for _, n := range networks {
		out = append(out, "network "+n.Name)
	}
	return out, errors.Join(err1, err2, err3)
}
