// Package cluster is what the runner knows of container clusters: a
// driver deploys a case's endpoints on a cluster's nodes as containers
// that each run `cnbench agent --container`, and hands back where those
// agents answer and how to trust them. The runner then drives the
// endpoints exactly as it drives agents on machines. Docker Swarm is one
// driver (package swarm); another cluster, such as Kubernetes, is another
// package that registers itself here, a section of the scenario that
// names the cluster, a field of Config that the runner fills from it, and
// its modes' rows in the cluster family (package mode/cluster).
package cluster

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"

	"cnbench/internal/netns"
)

// Config says where the clusters of a run are: one field per kind of
// cluster, nil where the run names none of that kind.
type Config struct {
	Swarm      *Swarm
	Kubernetes *Kubernetes
}

// Kubernetes is where the Kubernetes cluster is and where on it to place
// pods. Every object cnbench creates there lives in one namespace and
// carries the run's token as a label.
type Kubernetes struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG or
	// ~/.kube/config, as kubectl reads them. Context picks one of its
	// contexts; empty means its current one.
	Kubeconfig, Context string
	// Namespace is an existing namespace to work in; empty means one
	// cnbench creates for the run and deletes after it.
	Namespace string
	// Image is cnbench's image as the nodes pull it (`cnbench image`
	// writes one); empty means the tag `cnbench image` gives it.
	Image string
	// Nodes are node names: servers go on the first, clients on the
	// second (or the first, in chc). Empty means chosen: the first two
	// ready nodes, by name, that take pods and match NodeSelector.
	Nodes []string
	// NodeSelector are labels (key=value) a chosen node must carry.
	NodeSelector map[string]string
	// Tolerations let pods onto tainted nodes.
	Tolerations []Toleration
	// ControlPort is the first of the ports the endpoints' agents listen
	// on, one per endpoint; 0 means the driver's default.
	ControlPort int
	// Dial, when set, opens connections to the API server in place of
	// the network's own dialer: a caller whose cluster answers in
	// another network namespace passes one.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Toleration lets pods onto nodes with a matching taint, as a pod
// spec's toleration does.
type Toleration struct {
	Key, Operator, Value, Effect string
}

// Swarm is where the swarm is and which nodes to use.
type Swarm struct {
	// Manager is a manager node's Engine API: unix:///path or tcp://HOST:PORT.
	Manager string
	// CA, Cert and Key secure a tcp Manager as docker --tlsverify does.
	CA, Cert, Key string
	// Nodes are node host names or IDs: servers go on the first, clients
	// on the second (or the first, in chc).
	Nodes []string
	// Image is cnbench's image, present on every node (the driver's
	// default where empty).
	Image string
	// ControlPort is the first of the ports the endpoints' agents listen
	// on, one per endpoint; 0 means the driver's default.
	ControlPort int
}

// Endpoint is one deployed endpoint.
type Endpoint struct {
	Role string
	// Node names the node it runs on, as results record it.
	Node string
	// Control is where its agent answers; ServerName is what the agent's
	// certificate names.
	Control    netip.AddrPort
	ServerName string
	// Addr is its address on the case's network, which its engine uses.
	Addr netip.Addr
	// Netns names the network namespace the endpoint shares with others
	// of the deployment (hostNetwork pods on one node, two containers of
	// one pod), whose counters count once; empty for one of its own.
	Netns string
}

// Describer is a cluster that says what it runs, for a case to record as
// its mode_config.
type Describer interface {
	// Describe returns, as JSON, what the named nodes and the cluster
	// run (versions, kernels, network plugins), and why where unknown.
	Describe(ctx context.Context, nodes []string) string
}

// Refuser is a deployment on whose paths some workloads cannot run.
type Refuser interface {
	// Refuses says why workload cannot run on the deployment's path, or
	// returns nil if it can.
	Refuses(workload string) error
}

// Publisher is a deployment that puts a server's ports behind something
// of the cluster's own (a Service) that clients dial instead of the
// server's address. Like a published container's, the ports are fixed
// before the engines start, so the clients' agents know the addresses
// they may send to.
type Publisher interface {
	// Publish puts ports of the endpoint of role behind the cluster's
	// front and returns the addresses clients dial, one per port; none
	// where the mode dials the server directly.
	Publish(ctx context.Context, role string, ports []int) ([]netip.AddrPort, error)
	// Expose returns what clients dial to reach port of the endpoint of
	// role, once they can.
	Expose(ctx context.Context, role string, port int) (netip.AddrPort, error)
}

// Deployment is one case's endpoints on a cluster.
type Deployment interface {
	Endpoints() []Endpoint
	// ClientTLS is the controller's side of the agents' TLS.
	ClientTLS(serverName string) *tls.Config
	// Remove takes away everything Deploy made, past errors.
	Remove() error
}

// Cluster deploys endpoints on one cluster.
type Cluster interface {
	// Deploy places one endpoint per role on network (what follows the
	// mode's prefix, such as "overlay"): the first servers roles on the
	// first node and the others (the clients) on the second, or all on
	// one node if sameNode. A cluster that cannot is a skip: the error
	// wraps mode.ErrUnsupported.
	// Deployments may live side by side: the runner pairs modes by
	// keeping one case's endpoints while another's take their turn.
	Deploy(ctx context.Context, tok netns.Token, network string, roles []string, servers int, sameNode bool) (Deployment, error)
	Close() error
}

// Opener connects to the cluster cfg names; it returns nil and no error
// when cfg names none of its kind.
type Opener func(ctx context.Context, cfg Config) (Cluster, error)

var (
	mu      sync.Mutex
	openers = map[string]Opener{}
)

// Register makes the modes whose names start with prefix (such as
// "swarm:") deploy through open.
func Register(prefix string, open Opener) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[prefix]; dup {
		panic("cluster registered twice: " + prefix)
	}
	openers[prefix] = open
}

// For returns the prefix and opener of the cluster a mode deploys on.
func For(modeName string) (string, Opener, bool) {
	mu.Lock()
	defer mu.Unlock()
	prefixes := make([]string, 0, len(openers))
	for p := range openers {
		prefixes = append(prefixes, p)
	}
	sort.Strings(prefixes)
	for _, p := range prefixes {
		if strings.HasPrefix(modeName, p) {
			return p, openers[p], true
		}
	}
	return "", nil, false
}

// DeployedAt is the port the agent of the i-th endpoint of the
// deployed-th deployment listens on, from first: deployments that live
// side by side on one node's network take ports of their own, within
// SideBySide of them.
func DeployedAt(first, deployed, roles, i int) int {
	return first + roles*((deployed-1)%SideBySide) + i
}

// SideBySide is how many deployments of one cluster may live at once.
const SideBySide = 8
