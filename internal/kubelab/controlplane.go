package kubelab

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"cnbench/internal/cleanup"
	"cnbench/internal/daemon"
)

// startCP forks a control-plane daemon in the control plane's namespace.
// The control plane writes only where its flags point, so it needs no
// mount namespace of its own.
func (c *Cluster) startCP(name string, args ...string) (*daemon.Process, error) {
	p, err := daemon.Start(daemon.Spec{
		Name: name, NS: c.cp, Token: c.Token, Record: "k8s-" + name,
		Dir: c.dir, Log: filepath.Join(c.dir, name+".log"), Args: args,
		Env: []string{sbinPath()},
	})
	if p != nil {
		c.cpProcs = append(c.cpProcs, p)
	}
	return p, err
}

// startEtcdAndAPIServer starts etcd, on the control plane's loopback
// only, and the API server; waitAPIServer waits for the latter.
func (c *Cluster) startEtcdAndAPIServer() error {
	dataDir := filepath.Join(c.dir, "etcd")
	if _, err := c.startCP("etcd", "etcd", "--name=kubelab", "--data-dir="+dataDir,
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=kubelab=http://127.0.0.1:2380", "--logger=zap", "--log-level=warn",
		// The lab's data lives as long as the lab: durability buys nothing.
		"--snapshot-count=100000", "--quota-backend-bytes=1073741824"); err != nil {
		return err
	}
	p := c.pki
	_, err := c.startCP("kube-apiserver", filepath.Join(c.cfg.Bin, "kube-apiserver"),
		"--etcd-servers=http://127.0.0.1:2379",
		"--advertise-address="+ControlPlaneAddr.String(), fmt.Sprintf("--secure-port=%d", APIPort),
		"--tls-cert-file="+p.path("apiserver.crt"), "--tls-private-key-file="+p.path("apiserver.key"),
		"--cert-dir="+filepath.Join(c.dir, "apiserver"),
		"--token-auth-file="+p.path("tokens.csv"), "--authorization-mode=Node,RBAC", "--anonymous-auth=false",
		"--service-cluster-ip-range="+ServiceCIDR.String(),
		"--service-account-key-file="+p.path("sa.pub"), "--service-account-signing-key-file="+p.path("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		// Node names resolve nowhere; the API server reaches kubelets
		// (logs, exec, port-forward) by their addresses.
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--allow-privileged=true", "--profiling=false", "--enable-priority-and-fairness=false")
	return err
}

// waitAPIServer waits until the API server is ready, or one of the
// control plane's daemons has died.
func (c *Cluster) waitAPIServer(ctx context.Context) error {
	hc, err := rest.HTTPClientFor(c.RestConfig())
	if err != nil {
		return err
	}
	url := "https://" + c.APIServer.String() + "/readyz"
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if err := c.checkAlive(ctx, deadline, "the API server to be ready ("+last+")"); err != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.client, err = kubernetes.NewForConfig(c.RestConfig())
	return err
}

// checkAlive returns an error once ctx is done, deadline has passed, or a
// daemon of the lab has died; waiting says what for.
func (c *Cluster) checkAlive(ctx context.Context, deadline time.Time, waiting string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kubelab: waiting for %s: %w", waiting, err)
	}
	if time.Now().After(deadline) {
		return fmt.Errorf("kubelab: timed out waiting for %s", waiting)
	}
	procs := append([]*daemon.Process(nil), c.cpProcs...)
	for _, n := range c.Nodes {
		procs = append(procs, n.procs...)
	}
	for _, p := range procs {
		select {
		case <-p.Exited():
			return fmt.Errorf("kubelab: %s %s while waiting for %s: %s", p.Name, cleanup.HowEnded(p.Cmd.ProcessState), waiting, p.Tail())
		default:
		}
	}
	return nil
}

// startControllers starts the controller manager and the scheduler. Both
// serve nothing (--secure-port=0) and elect no leader: the lab has one of
// each, and waiting for a lease only slows the start.
func (c *Cluster) startControllers() error {
	kc := c.Kubeconfig
	if _, err := c.startCP("kube-controller-manager", filepath.Join(c.cfg.Bin, "kube-controller-manager"),
		"--kubeconfig="+kc, "--leader-elect=false", "--secure-port=0",
		"--cert-dir="+filepath.Join(c.dir, "controller-manager"),
		"--service-account-private-key-file="+c.pki.path("sa.key"), "--root-ca-file="+c.pki.path("ca.crt"),
		"--service-cluster-ip-range="+ServiceCIDR.String(), "--cluster-cidr="+ClusterCIDR.String(),
		"--allocate-node-cidrs=false", "--use-service-account-credentials=false",
		"--cluster-name="+c.Token.Name("k8s"), "--profiling=false"); err != nil {
		return err
	}
	_, err := c.startCP("kube-scheduler", filepath.Join(c.cfg.Bin, "kube-scheduler"),
		"--kubeconfig="+kc, "--leader-elect=false", "--secure-port=0",
		"--cert-dir="+filepath.Join(c.dir, "scheduler"), "--profiling=false")
	return err
}
