package main

// The clusters that cluster modes (swarm:*) deploy on register
// themselves with package cluster when linked in.
import _ "cnbench/internal/swarm"
