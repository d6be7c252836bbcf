package mode

import "fmt"

// ErrNeedsCluster marks a cluster mode (swarm:*, k8s:*) on its own: its
// endpoints are a cluster's containers, which this machine's emulated
// hosts cannot give. A run whose scenario names the cluster goes past it
// and deploys there (package cluster); without one, its cases are
// skipped with this reason.
var ErrNeedsCluster = fmt.Errorf("%w: a cluster mode runs on a cluster", ErrUnsupported)

// NeedsCluster is the Available of the modes of a cluster that the
// scenario's section names, or the flag where one names it too.
func NeedsCluster(section string, flag ...string) func() error {
	return func() error {
		if len(flag) > 0 {
			return fmt.Errorf("%w: name one with %s or in the scenario's %s section", ErrNeedsCluster, flag[0], section)
		}
		return fmt.Errorf("%w: name one in the scenario's %s section", ErrNeedsCluster, section)
	}
}
