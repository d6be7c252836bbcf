// Package cluster is what the runner knows of container clusters: a
// driver deploys a case's endpoints on a cluster's nodes as containers
// that each run `cnbench agent --container`, and hands back where those
// agents answer and how to trust them. The runner then drives the
// endpoints exactly as it drives agents on machines. Docker Swarm is one
// driver (package swarm); another cluster, such as Kubernetes, is another
// package that registers itself here, a section of the scenario that
// names the cluster, and its modes in package mode, with no change to the
// runner.
package cluster

import (
	"context"
	"crypto/tls"
	"net/netip"
	"sort"
	"strings"
	"sync"

	"cnbench/internal/netns"
	"cnbench/internal/scenario"
)

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
	// mode's prefix, such as "overlay"), all on one node if sameNode, or
	// else each on a node of its own. A cluster that cannot is a skip:
	// the error wraps mode.ErrUnsupported.
	Deploy(ctx context.Context, tok netns.Token, network string, roles []string, sameNode bool) (Deployment, error)
	Close() error
}

// Opener connects to the cluster a scenario names; it returns nil and no
// error when the scenario names none of its kind.
type Opener func(ctx context.Context, spec *scenario.Spec) (Cluster, error)

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
