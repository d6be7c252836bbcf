package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"cnbench/internal/agent"
	"cnbench/internal/docker"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/scenario"
	"cnbench/internal/swarm"
	"cnbench/internal/topo"
)

// swarmCluster is the scenario's swarm, connected on first use.
type swarmCluster struct {
	cfg     *scenario.Swarm
	once    sync.Once
	cluster *swarm.Cluster
	err     error
}

// useSwarm takes the scenario's swarm section for the cases to come.
func (r *Runner) useSwarm(s *scenario.Swarm) {
	r.swarm = nil
	if s != nil {
		r.swarm = &swarmCluster{cfg: s}
	}
}

func (s *swarmCluster) connect(ctx context.Context) (*swarm.Cluster, error) {
	s.once.Do(func() {
		image := s.cfg.Image
		if image == "" {
			image = docker.ImageTag()
		}
		s.cluster, s.err = swarm.Connect(ctx, swarm.Config{Manager: s.cfg.Manager, CA: s.cfg.CA, Cert: s.cfg.Cert, Key: s.cfg.Key,
			Nodes: s.cfg.Nodes, Image: image, ControlPort: s.cfg.ControlPort})
	})
	return s.cluster, s.err
}

func (s *swarmCluster) close() {
	if s != nil && s.cluster != nil {
		s.cluster.Close()
	}
}

// placeOnSwarm deploys the case's server and client as engine services on
// the swarm's nodes, the server on the first node and the client on the
// second (chhc) or the first as well (chc), and reaches each through the
// agent inside its container.
func (r *Runner) placeOnSwarm(ctx context.Context, c *model.Case, d mode.Descriptor, _ topo.Options) (pl placed, err error) {
	if r.swarm == nil {
		return placed{}, mode.ErrNeedsSwarm
	}
	if d.Supports != nil {
		if err := d.Supports(c.Topology); err != nil {
			return placed{}, err
		}
	}
	if err := remoteCase(c, "a swarm"); err != nil {
		return placed{}, err
	}
	cl, err := r.swarm.connect(ctx)
	if err != nil {
		return placed{}, err
	}
	nodes := []int{0, 0}
	if c.Topology == topo.CHHC {
		if len(cl.Nodes) < 2 {
			return placed{}, fmt.Errorf("%w: chhc on a swarm needs two nodes in the swarm section", mode.ErrUnsupported)
		}
		nodes[1] = 1
	}
	driver := strings.TrimPrefix(c.Mode, mode.SwarmPrefix)
	dep, err := cl.Deploy(ctx, r.token, driver, []string{"s1", "c1"}, nodes)
	if err != nil {
		return placed{}, err
	}
	var sessions []*agent.Session
	closeAll := func() error {
		var errs []error
		for _, s := range sessions {
			errs = append(errs, s.Close())
		}
		return errors.Join(append(errs, dep.Remove())...)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, closeAll())
		}
	}()
	server := dep.Endpoints[0]
	var slots []*slot
	for _, ep := range dep.Endpoints {
		client := agent.NewClientTLS(ep.Control.String(), dep.PKI.ClientTLS(ep.Node.Addr.String()))
		s, err := openWhenUp(ctx, client)
		if err != nil {
			return placed{}, fmt.Errorf("engine service %s on %s: %w", ep.Role, ep.Node.Name, err)
		}
		sessions = append(sessions, s)
		sl, err := agentEndpoint(ctx, s, agent.EndpointRequest{Mode: agent.ContainerMode, Name: ep.Role,
			Addr: ep.Addr.String(), Peers: []string{server.Addr.String()}})
		if err != nil {
			return placed{}, err
		}
		slots = append(slots, sl)
	}
	return r.remotePlaced(ctx, c, slots, dep.Endpoints[0].Node.Name, dep.Endpoints[1].Node.Name, closeAll)
}

// openWhenUp opens a session on an agent that may still be starting: a
// task counts as running before its program listens.
func openWhenUp(ctx context.Context, c *agent.Client) (*agent.Session, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := c.Open(ctx, AgentTimeout)
		var opErr *net.OpError
		if err == nil || !errors.As(err, &opErr) || time.Now().After(deadline) {
			return s, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
