package site

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cnbench/internal/cluster"
	_ "cnbench/internal/kube"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/topo"
)

// TestUnreachableClusterFailsItsCases names a cluster whose API server
// refuses connections (a port of loopback where nothing listens): each
// case fails with the API server's error, the connection is tried once
// for all of them, and closing the placer afterwards is safe (a failed
// connection once came back as a nil pointer that Close called).
func TestUnreachableClusterFailsItsCases(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600)
	cs := NewClusters(cluster.Config{Kubernetes: &cluster.Kubernetes{Kubeconfig: kubeconfig}}, netns.NewToken())
	defer cs.Close()
	for _, m := range []string{"k8s:pod", "k8s:service"} {
		c := &model.Case{Mode: m, Topology: "chc", Workload: "tcp_stream", Engine: "native", Params: model.Params{Flows: 1}}
		plan, err := PlanFor(c)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.Place(context.Background(), c, plan, nil)
		if err == nil || !strings.Contains(err.Error(), "API server https://127.0.0.1:1") || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("%s: got %v, want the API server's refusal", m, err)
		}
	}
}

// TestAgentsRefuseManyEndpoints has the agents' placer skip a pattern of
// several endpoints, saying why, before it dials any agent (an address
// where none listens): it once placed one pair under the pattern's name.
func TestAgentsRefuseManyEndpoints(t *testing.T) {
	a := NewAgents([]AgentHost{{Name: "h1", Addr: "127.0.0.1:1"}, {Name: "h2", Addr: "127.0.0.1:1"}})
	c := &model.Case{Mode: "bridge", Topology: topo.CHHC, Engine: "native",
		Params: model.Params{Pattern: model.PatternFanIn, Clients: 4}}
	_, err := a.Place(context.Background(), c, Plan{}, nil)
	if !errors.Is(err, mode.ErrUnsupported) || !strings.Contains(err.Error(), "5 endpoints across agents (servers: 1, clients: 4)") {
		t.Errorf("fan_in of 4 across agents: %v; want a skip naming the endpoints", err)
	}
}
