package swarm

import (
	"context"

	"cnbench/internal/cluster"
	"cnbench/internal/docker"
	modecluster "cnbench/internal/mode/cluster"
	"cnbench/internal/scenario"
)

func init() { cluster.Register(modecluster.SwarmPrefix, open) }

// open connects to the swarm a scenario's swarm section names.
func open(ctx context.Context, spec *scenario.Spec) (cluster.Cluster, error) {
	s := spec.Swarm
	if s == nil {
		return nil, nil
	}
	image := s.Image
	if image == "" {
		image = docker.ImageTag()
	}
	return Connect(ctx, Config{Manager: s.Manager, CA: s.CA, Cert: s.Cert, Key: s.Key, Nodes: s.Nodes, Image: image, ControlPort: s.ControlPort})
}
