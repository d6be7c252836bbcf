package kube

import (
	"context"

	"cnbench/internal/cluster"
	"cnbench/internal/image"
	modecluster "cnbench/internal/mode/cluster"
)

func init() { cluster.Register(modecluster.KubePrefix, open) }

// open connects to the Kubernetes cluster cfg names.
func open(ctx context.Context, cfg cluster.Config) (cluster.Cluster, error) {
	if cfg.Kubernetes == nil {
		return nil, nil
	}
	c := *cfg.Kubernetes
	if c.Image == "" {
		c.Image = image.Tag()
	}
	return Connect(ctx, c)
}
