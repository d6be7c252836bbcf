package swarm_test

import (
	"bytes"
	"cnbench/internal/image"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	dswarm "github.com/docker/docker/api/types/swarm"

	"cnbench/internal/cleanup"
	"cnbench/internal/docker"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/store/storetest"
	"cnbench/internal/swarm"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
)

var binary string

func TestMain(m *testing.M) {
	code := func() int {
		if os.Geteuid() != 0 {
			return m.Run()
		}
		path, done, err := testutil.BuildCnbench()
		if err != nil {
			fmt.Fprintf(os.Stderr, "the swarm tests run cnbench as processes: %v\n", err)
			return 1
		}
		defer done()
		binary = path
		return m.Run()
	}()
	os.Exit(code)
}

// TestSwarmOverlayAcrossTwoNodes builds a real two-node Docker Swarm on
// this machine, one private dockerd in each of two emulated hosts joined
// by a wire, and runs a scenario of the swarm modes from a controller
// process in the first host: the engines run as services on both nodes,
// over a swarm overlay network and on the nodes' host network, within one
// node (chc) and across the two (chhc). Every case must measure, name
// its nodes, and leave no service, secret or network behind; the test
// then removes the swarm, the daemons and the hosts.
func TestSwarmOverlayAcrossTwoNodes(t *testing.T) {
	testutil.RequireRoot(t)
	for _, p := range docker.Programs {
		testutil.RequireTool(t, p)
	}
	if binary == "" {
		t.Skip("skipped: the cnbench binary was not built")
	}
	tok := netns.NewToken()
	if err := cleanup.Claim(tok); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cleanup.Release(tok); err != nil {
			t.Error(err)
		}
	})
	hosts, err := topo.Build(topo.CHHC, tok, topo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hosts.Close(); err != nil {
			t.Error(err)
		}
	})
	saved := docker.EndpointImage
	docker.EndpointImage = image.Spec{Binary: binary}
	t.Cleanup(func() { docker.EndpointImage = saved })

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var daemons []*docker.Daemon
	for i, h := range hosts.Hosts {
		d, err := docker.Start(h.NS, tok, "n"+h.Name, docker.Config{Bip: netip.MustParsePrefix(fmt.Sprintf("198.19.%d.254/24", i+1))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := d.Stop(); err != nil {
				t.Error(err)
			}
			if _, err := os.Stat(d.Dir); !os.IsNotExist(err) {
				t.Errorf("dockerd's directory %s is left: %v", d.Dir, err)
			}
		})
		if _, err := d.EnsureImage(ctx); err != nil {
			t.Fatal(err)
		}
		daemons = append(daemons, d)
	}
	// Equivalent to: docker swarm init --advertise-addr 198.18.0.1
	// --default-addr-pool 198.19.192.0/19; docker swarm join on the other.
	manager, worker := daemons[0], daemons[1]
	_, err = manager.Client.SwarmInit(ctx, dswarm.InitRequest{ListenAddr: "198.18.0.1:2377", AdvertiseAddr: "198.18.0.1",
		DefaultAddrPool: []string{"198.19.192.0/19"}, SubnetSize: 24})
	if err != nil {
		t.Fatalf("swarm init: %v", err)
	}
	t.Cleanup(func() {
		lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer lcancel()
		for _, d := range []*docker.Daemon{worker, manager} {
			if err := d.Client.SwarmLeave(lctx, true); err != nil {
				t.Errorf("leave the swarm in %s: %v", d.NS.Name, err)
			}
			// Leaving removes the stopped tasks' containers in the
			// background; the daemon's own stop would race it.
			for lctx.Err() == nil {
				list, err := d.Client.ContainerList(lctx, container.ListOptions{All: true})
				if err != nil || len(list) == 0 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	})
	sw, err := manager.Client.SwarmInspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = worker.Client.SwarmJoin(ctx, dswarm.JoinRequest{ListenAddr: "198.18.0.2:2377", AdvertiseAddr: "198.18.0.2",
		RemoteAddrs: []string{"198.18.0.1:2377"}, JoinToken: sw.JoinTokens.Worker})
	if err != nil {
		t.Fatalf("swarm join: %v", err)
	}
	var nodeIDs []string
	for _, d := range daemons {
		info, err := d.Client.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		nodeIDs = append(nodeIDs, info.Swarm.NodeID)
	}
	managerAPI := "unix://" + filepath.Join(manager.Dir, "docker.sock")
	cfg := swarm.Config{Manager: managerAPI, Nodes: nodeIDs, Image: docker.ImageTag()}
	// The worker is ready once the manager says so.
	for {
		if cl, err := swarm.Connect(ctx, cfg); err == nil {
			cl.Close()
			break
		} else if ctx.Err() != nil {
			t.Fatalf("the swarm's nodes are not ready: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	doc := fmt.Sprintf(`name: swarm
modes: [swarm:host, swarm:overlay]
topologies: [chc, chhc]
workloads: [tcp_stream]
duration: 1s
warmup: 500ms
samples: 2
swarm: {manager: %q, nodes: [%s, %s]}
`, managerAPI, nodeIDs[0], nodeIDs[1])
	scenario := filepath.Join(t.TempDir(), "swarm.yaml")
	if err := os.WriteFile(scenario, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "r.db")
	var out bytes.Buffer
	ctl := exec.CommandContext(ctx, binary, "run", scenario, "--db", db, "--order", "sequential")
	ctl.Stdout, ctl.Stderr = &out, &out
	ctl.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// The controller runs in the manager's host, as on a machine of the
	// cluster's network: it reaches the nodes' addresses over the wire.
	if err := hosts.Hosts[0].NS.Do(ctl.Start); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("controller:\n%s", out.String())

	res := storetest.LoadRun(t, db, 1)
	throughput := map[string]float64{}
	for _, c := range res.Cases {
		if c.Status != model.StatusOK {
			t.Fatalf("%s: %s: %s", c.Key, c.Status, c.Reason)
		}
		var sum float64
		for _, s := range c.Samples {
			sum += s.Values[model.ThroughputBPS]
		}
		mean := sum / float64(len(c.Samples))
		throughput[c.Mode+"/"+c.Topology] = mean
		t.Logf("%-16s %-5s %6.2f Gbit/s  server on %s, client on %s", c.Mode, c.Topology, mean/1e9, c.Params.ServerNode, c.Params.ClientNode)
		if mean < 1e6 {
			t.Errorf("%s: %.0f bit/s; the engines did not exchange traffic worth the name", c.Key, mean)
		}
		sameNode := c.Params.ServerNode == c.Params.ClientNode
		if c.Params.ServerNode == "" || (c.Topology == topo.CHC) != sameNode {
			t.Errorf("%s: server on %q, client on %q; want one node in chc and two in chhc", c.Key, c.Params.ServerNode, c.Params.ClientNode)
		}
	}
	if len(throughput) != 4 {
		t.Fatalf("got cases %v, want the two swarm modes in chc and chhc", throughput)
	}
	t.Logf("overlay against the host network across nodes: %.2f", throughput["swarm:overlay/chhc"]/throughput["swarm:host/chhc"])

	runTok := regexp.MustCompile(`cases, token ([0-9a-f]{4})`).FindStringSubmatch(out.String())
	if runTok == nil {
		t.Fatalf("the controller named no run token:\n%s", out.String())
	}
	cl, err := swarm.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	left, err := cl.Leftovers(ctx, netns.Token(runTok[1]))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the run left on the swarm: %v", left)
	}
}
