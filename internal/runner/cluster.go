package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"cnbench/internal/agent"
	"cnbench/internal/cluster"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/scenario"
	"cnbench/internal/topo"
)

// clusters are the clusters a scenario names, each connected on the first
// case of its modes.
type clusters struct {
	cfg  cluster.Config
	mu   sync.Mutex
	open map[string]cluster.Cluster // by mode prefix; nil: the scenario names none
	errs map[string]error
}

// useClusters takes the scenario's cluster sections for the cases to come.
func (r *Runner) useClusters(spec *scenario.Spec) {
	r.clusters = &clusters{cfg: clusterConfig(spec), open: map[string]cluster.Cluster{}, errs: map[string]error{}}
}

// clusterConfig is where the scenario's cluster sections say the
// clusters are.
func clusterConfig(spec *scenario.Spec) cluster.Config {
	var cfg cluster.Config
	if s := spec.Swarm; s != nil {
		cfg.Swarm = &cluster.Swarm{Manager: s.Manager, CA: s.CA, Cert: s.Cert, Key: s.Key, Nodes: s.Nodes, Image: s.Image, ControlPort: s.ControlPort}
	}
	return cfg
}

func (cs *clusters) get(ctx context.Context, prefix string, open cluster.Opener) (cluster.Cluster, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cl, done := cs.open[prefix]; done {
		return cl, cs.errs[prefix]
	}
	cl, err := open(ctx, cs.cfg)
	cs.open[prefix], cs.errs[prefix] = cl, err
	return cl, err
}

func (cs *clusters) close() {
	if cs == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, cl := range cs.open {
		if cl != nil {
			_ = cl.Close()
		}
	}
	cs.open = map[string]cluster.Cluster{}
}

// onCluster reports whether a case's mode deploys on a cluster.
func onCluster(c *model.Case) bool {
	_, _, ok := cluster.For(c.Mode)
	return ok
}

// placeOnCluster deploys the case's server and client on the cluster its
// mode names, on one node in chc and on two in chhc, and reaches each
// through the agent inside its container.
func (r *Runner) placeOnCluster(ctx context.Context, c *model.Case, d mode.Descriptor, _ topo.Options) (pl placed, err error) {
	prefix, open, _ := cluster.For(c.Mode)
	if d.Supports != nil {
		if err := d.Supports(c.Topology); err != nil {
			return placed{}, err
		}
	}
	if err := remoteCase(c, "a cluster"); err != nil {
		return placed{}, err
	}
	cl, err := r.clusters.get(ctx, prefix, open)
	if err != nil {
		return placed{}, err
	}
	if cl == nil {
		return placed{}, d.Available()
	}
	dep, err := cl.Deploy(ctx, r.token, c.Mode[len(prefix):], []string{"s1", "c1"}, c.Topology == topo.CHC)
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
	eps := dep.Endpoints()
	var slots []*slot
	for _, ep := range eps {
		s, err := openWhenUp(ctx, agent.NewClientTLS(ep.Control.String(), dep.ClientTLS(ep.ServerName)))
		if err != nil {
			return placed{}, fmt.Errorf("endpoint %s on %s: %w", ep.Role, ep.Node, err)
		}
		sessions = append(sessions, s)
		sl, err := agentEndpoint(ctx, s, agent.EndpointRequest{Mode: agent.ContainerMode, Name: ep.Role,
			Addr: ep.Addr.String(), Peers: []string{eps[0].Addr.String()}})
		if err != nil {
			return placed{}, err
		}
		slots = append(slots, sl)
	}
	return r.remotePlaced(ctx, c, slots, eps[0].Node, eps[1].Node, closeAll)
}

// openWhenUp opens a session on an agent that may still be starting: a
// container counts as running before its program listens.
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
