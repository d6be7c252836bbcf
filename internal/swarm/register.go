package swarm

import (
	"context"

	"cnbench/internal/cluster"
	"cnbench/internal/docker"
	modecluster "cnbench/internal/mode/cluster"
)

func init() { cluster.Register(modecluster.SwarmPrefix, open) }

// open connects to the swarm cfg names.
func open(ctx context.Context, cfg cluster.Config) (cluster.Cluster, error) {
	if cfg.Swarm == nil {
		return nil, nil
	}
	c := *cfg.Swarm
	if c.Image == "" {
		c.Image = docker.ImageTag()
	}
	return Connect(ctx, c)
}
