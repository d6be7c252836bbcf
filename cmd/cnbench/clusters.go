package main

// The clusters that cluster modes (swarm:*, k8s:*) deploy on register
// themselves with package cluster when linked in.
import (
	_ "cnbench/internal/kube"
	_ "cnbench/internal/swarm"
)
