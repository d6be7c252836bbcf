package kube

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cnbench/internal/agent"
	"cnbench/internal/image"
	"cnbench/internal/kubelab"
	"cnbench/internal/mode"
	"cnbench/internal/netns"
	"cnbench/internal/testutil"
)

// lab is the cluster every test of the package deploys on, started once
// by TestMain when this machine can run one.
var (
	lab     *kubelab.Cluster
	labWhy  string // why there is none
	imageOK string // the tag of cnbench's image on the nodes
	binary  string // the cnbench binary in that image
)

func TestMain(m *testing.M) {
	code := func() int {
		if os.Geteuid() != 0 {
			labWhy = "needs root"
			return m.Run()
		}
		stop, why := startLab()
		labWhy = why
		defer stop()
		return m.Run()
	}()
	os.Exit(code)
}

// startLab starts a two-node cluster with cnbench's image on its nodes;
// it returns why not where this machine cannot.
func startLab() (stop func(), why string) {
	stop = func() {}
	bin, err := kubelab.Binaries()
	if err != nil {
		return stop, err.Error()
	}
	if missing := kubelab.Missing(); len(missing) > 0 {
		return stop, "this machine lacks " + strings.Join(missing, ", ")
	}
	path, cleanup, err := testutil.BuildCnbench()
	if err != nil {
		return stop, "build cnbench: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := kubelab.Start(ctx, kubelab.Config{Bin: bin})
	if err != nil {
		cleanup()
		return stop, "" // a lab that should start and does not fails every test below
	}
	stop = func() {
		if err := c.Stop(); err != nil {
			println("kubelab stop:", err.Error())
		}
		cleanup()
	}
	if err := c.Load(ctx, image.Spec{Binary: path, Tools: agent.ProgramNames()}, image.Tag()); err != nil {
		return stop, ""
	}
	lab, imageOK, binary = c, image.Tag(), path
	return stop, ""
}

// requireLab skips where the machine cannot run a cluster, saying why,
// and fails where it should have and did not.
func requireLab(t *testing.T) *kubelab.Cluster {
	t.Helper()
	if labWhy != "" {
		t.Skip("skipped: no Kubernetes cluster here: " + labWhy)
	}
	if lab == nil {
		t.Fatal("the lab cluster did not start, or cnbench's image did not load into its nodes")
	}
	return lab
}

// dials counts the connections made to the lab's API server through its
// Dial: the only way there from this test's namespace, so that none
// leaves by this machine's own routes.
var dials atomic.Int64

// connect connects to the lab as a run would; namespace is an existing
// one to work in, or "" for one of the run's own, which Close deletes
// (and waits for, some seconds).
func connect(t *testing.T, c *kubelab.Cluster, image, namespace string) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return c.Dial(ctx, network, addr)
	}
	k, err := Connect(ctx, Config{Kubeconfig: c.Kubeconfig, Dial: dial, Image: image, ControlPort: DefaultControlPort, Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestDeploysEachPath deploys a server and a client on each of the
// paths the modes name, on one node and on two, and has each agent
// answer through its forwarded port; where the client dials a Service,
// the client's pod must connect through it (to the server's agent port,
// the one port that listens before an engine does), and the address it
// dials must be the Service's, not the pod's.
func TestDeploysEachPath(t *testing.T) {
	c := requireLab(t)
	k := connect(t, c, imageOK, "default")
	tok := netns.NewToken()
	defer func() {
		if err := k.Close(); err != nil {
			t.Error(err)
		}
		left, err := k.Leftovers(context.Background(), tok)
		if err != nil || len(left) > 0 {
			t.Errorf("left on the cluster: %v (%v)", left, err)
		}
	}()
	t.Run("side by side", func(t *testing.T) { deployAll(t, k, c, tok) })
}

func deployAll(t *testing.T, k *Cluster, c *kubelab.Cluster, tok netns.Token) {
	for _, tc := range []struct {
		network  string
		sameNode bool
	}{
		{NetHostNetwork, false}, {NetPod, true}, {NetPod, false}, {NetService, true}, {NetService, false},
		{NetNodePort, false}, {NetHairpin, true},
	} {
		name := tc.network + map[bool]string{true: "/one-node", false: "/two-nodes"}[tc.sameNode]
		t.Run(name, func(t *testing.T) {
			// Deployments live side by side, as the runner's turns keep
			// them.
			t.Parallel()
			deployOne(t, k, c, tok, tc.network, tc.sameNode)
		})
	}
}

func deployOne(t *testing.T, k *Cluster, c *kubelab.Cluster, tok netns.Token, network string, sameNode bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began, dialed := time.Now(), dials.Load()
	dep, err := k.Deploy(ctx, tok, network, []string{"s1", "c1"}, 1, sameNode)
	if err != nil {
		t.Fatal(err)
	}
	// Each agent's port forward is a connection of its own.
	if n := dials.Load() - dialed; n < 2 {
		t.Errorf("%d connections through the cluster's Dial while deploying; the port forwards took another way", n)
	}
	defer func() {
		if err := dep.Remove(); err != nil {
			t.Error(err)
		}
	}()
	eps := dep.Endpoints()
	t.Logf("deployed in %s: %+v", time.Since(began).Round(time.Millisecond), eps)
	if len(eps) != 2 {
		t.Fatalf("%d endpoints, want 2", len(eps))
	}
	nodeAddr := map[string]string{}
	for _, n := range c.Nodes {
		nodeAddr[n.Name] = n.Addr.String()
	}
	if (eps[0].Node == eps[1].Node) != sameNode || nodeAddr[eps[0].Node] == "" {
		t.Errorf("nodes %s and %s; want them %s, among the lab's", eps[0].Node, eps[1].Node, map[bool]string{true: "one", false: "two"}[sameNode])
	}
	for _, ep := range eps {
		onNode := ep.Addr.String() == nodeAddr[ep.Node]
		if onNode != (network == NetHostNetwork) {
			t.Errorf("%s's address %s on node %s (%s): want the node's own only on the host network", ep.Role, ep.Addr, ep.Node, nodeAddr[ep.Node])
		}
		if !kubelab.ClusterCIDR.Contains(ep.Addr) && network != NetHostNetwork {
			t.Errorf("%s's address %s is not a pod address in %s", ep.Role, ep.Addr, kubelab.ClusterCIDR)
		}
		sess, err := agent.NewClientTLS(ep.Control.String(), dep.ClientTLS(ep.ServerName)).Open(ctx, 10*time.Second)
		if err != nil {
			t.Errorf("%s's agent through %s: %v", ep.Role, ep.Control, err)
			continue
		}
		if err := sess.Close(); err != nil {
			t.Errorf("%s's agent: close the session: %v", ep.Role, err)
		}
	}
	if network == NetHairpin && eps[0].Addr != eps[1].Addr {
		t.Errorf("hairpin's roles are in pods %s and %s, want one", eps[0].Addr, eps[1].Addr)
	}
	port := dep.(*Deployment).ports["s1"] // the agent's own, not the one forwarded here
	d := dep.(*Deployment)
	fronts, err := d.Publish(ctx, "s1", []int{port})
	if err != nil {
		t.Fatal(err)
	}
	target, err := d.Expose(ctx, "s1", port)
	if err != nil {
		t.Fatal(err)
	}
	if want := network != NetPod && network != NetHostNetwork; want != (len(fronts) == 1) || (want && fronts[0] != target) {
		t.Errorf("published %v, then exposed %s; want one front, the one exposed, only where the client dials a Service", fronts, target)
	}
	t.Logf("the client dials %s", target)
	switch network {
	case NetPod, NetHostNetwork:
		if target.Addr() != eps[0].Addr {
			t.Errorf("target %s, want the server's own address %s", target, eps[0].Addr)
		}
	case NetService, NetHairpin:
		if !kubelab.ServiceCIDR.Contains(target.Addr()) || int(target.Port()) != port {
			t.Errorf("target %s, want a ClusterIP in %s at port %d", target, kubelab.ServiceCIDR, port)
		}
	case NetNodePort:
		if target.Addr().String() != nodeAddr[eps[0].Node] || target.Port() < 30000 {
			t.Errorf("target %s, want the server's node %s at a NodePort", target, nodeAddr[eps[0].Node])
		}
	}
}

// TestImageThatCannotBePulledFailsAtOnce names an image no node has and
// no registry serves: the deployment fails with the pod's own reason
// well before the time-out.
func TestImageThatCannotBePulledFailsAtOnce(t *testing.T) {
	c := requireLab(t)
	k := connect(t, c, "cnbench-absent.invalid/cnbench:none", "default")
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	_, err := k.Deploy(ctx, netns.NewToken(), NetPod, []string{"s1", "c1"}, 1, true)
	took := time.Since(began)
	t.Logf("after %s: %v", took.Round(time.Millisecond), err)
	if err == nil || !slices.ContainsFunc([]string{"ErrImagePull", "ImagePullBackOff"}, func(s string) bool { return strings.Contains(err.Error(), s) }) {
		t.Fatalf("got %v, want the pod's image pull failure", err)
	}
	if took > podStartLimit/2 {
		t.Errorf("took %s to fail, want far less than the %s time-out", took, podStartLimit)
	}
	if errors.Is(err, mode.ErrUnsupported) {
		t.Errorf("an image that cannot be pulled is a failure, not a skip: %v", err)
	}
}
