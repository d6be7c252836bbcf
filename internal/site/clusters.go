package site

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"cnbench/internal/agent"
	"cnbench/internal/agent/protocol"
	"cnbench/internal/cluster"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// Clusters places cases of cluster modes (swarm:*) on the clusters a
// scenario names, each connected on the first case of its modes.
type Clusters struct {
	cfg   cluster.Config
	token netns.Token
	mu    sync.Mutex
	open  map[string]cluster.Cluster // by mode prefix
	errs  map[string]error
}

var _ Placer = (*Clusters)(nil)

// NewClusters connects to the clusters cfg names, each on the first case
// of its modes; deployments carry token in their names.
func NewClusters(cfg cluster.Config, token netns.Token) *Clusters {
	return &Clusters{cfg: cfg, token: token, open: map[string]cluster.Cluster{}, errs: map[string]error{}}
}

// Shared is true: a cluster deploys each case's endpoints for that case,
// and several cases' at once, so that modes take their samples in turns
// there too.
func (cs *Clusters) Shared() bool { return true }

func (cs *Clusters) get(ctx context.Context, prefix string, open cluster.Opener) (cluster.Cluster, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cl, done := cs.open[prefix]; done {
		return cl, cs.errs[prefix]
	}
	cl, err := open(ctx, cs.cfg)
	if err != nil {
		// A driver's failed connection may come back as a nil pointer
		// in the interface, which Close would call.
		cl = nil
	}
	cs.open[prefix], cs.errs[prefix] = cl, err
	return cl, err
}

// Close disconnects from every cluster.
func (cs *Clusters) Close() {
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

// Place deploys the case's servers and clients on the cluster its mode
// names, on one node in chc and the clients on a second in chhc, and
// reaches each through the agent inside its container.
func (cs *Clusters) Place(ctx context.Context, c *model.Case, plan Plan, ports []int) (pa *Path, err error) {
	prefix, open, _ := cluster.For(c.Mode)
	if d := plan.Mode; d.Supports != nil {
		if err := d.Supports(c.Topology); err != nil {
			return nil, err
		}
	}
	if err := remoteCase(c, "a cluster"); err != nil {
		return nil, err
	}
	cl, err := cs.get(ctx, prefix, open)
	if err != nil {
		return nil, err
	}
	if cl == nil {
		return nil, plan.Mode.Available()
	}
	servers, clients := c.Params.Endpoints()
	dep, err := cl.Deploy(ctx, cs.token, c.Mode[len(prefix):], clusterRoles(servers, clients), servers, c.Topology == topo.CHC)
	if err != nil {
		return nil, err
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
	peers, published, err := publish(ctx, dep, eps[:servers], ports)
	if err != nil {
		return nil, err
	}
	var sites []*Remote
	for _, ep := range eps {
		s, err := openWhenUp(ctx, agent.NewClientTLS(ep.Control.String(), dep.ClientTLS(ep.ServerName)))
		if err != nil {
			return nil, fmt.Errorf("endpoint %s on %s: %w", ep.Role, ep.Node, err)
		}
		sessions = append(sessions, s)
		r, err := placeRemote(ctx, s, protocol.EndpointRequest{Mode: protocol.ContainerMode, Name: ep.Role,
			Addr: ep.Addr.String(), Peers: peers})
		if err != nil {
			return nil, err
		}
		r.node = ep.Node
		if rf, ok := dep.(cluster.Refuser); ok {
			r.refuses = rf.Refuses
		}
		if ep.Netns != "" {
			r.netns = "cluster/" + ep.Netns
		}
		sites = append(sites, r)
	}
	pa = remotePath(ctx, sites[:servers], sites[servers:], closeAll)
	pa.Published = published
	if pub, ok := dep.(cluster.Publisher); ok {
		pa.expose = func(s Site, port int) (netip.AddrPort, error) { return pub.Expose(ctx, s.Endpoint().Name, port) }
	}
	if d, ok := cl.(cluster.Describer); ok {
		nodes := []string{pa.ServerNode}
		if pa.ClientNode != pa.ServerNode {
			nodes = append(nodes, pa.ClientNode)
		}
		pa.ModeConfig = d.Describe(ctx, nodes)
	}
	return pa, nil
}

// publish puts the servers' ports behind the deployment's fronts, where
// it has them, and returns the addresses every client's agent may send
// to: the servers' own and their fronts.
func publish(ctx context.Context, dep cluster.Deployment, servers []cluster.Endpoint, ports []int) (peers []string, published bool, err error) {
	for _, ep := range servers {
		peers = append(peers, ep.Addr.String())
	}
	pub, ok := dep.(cluster.Publisher)
	if !ok {
		return peers, false, nil
	}
	for _, ep := range servers {
		fronts, err := pub.Publish(ctx, ep.Role, ports)
		if err != nil {
			return nil, false, err
		}
		for _, f := range fronts {
			peers = append(peers, f.Addr().String())
		}
		published = published || len(fronts) > 0
	}
	return peers, published, nil
}

// clusterRoles names a case's endpoints on a cluster: servers s1..sN and
// clients c1..cM.
func clusterRoles(servers, clients int) []string {
	var roles []string
	for i := range servers {
		roles = append(roles, "s"+strconv.Itoa(i+1))
	}
	for i := range clients {
		roles = append(roles, "c"+strconv.Itoa(i+1))
	}
	return roles
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
