package kubelab

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"

	"cnbench/internal/image"
	"cnbench/internal/netns"
)

// Dial opens a connection from inside the control plane's namespace, so
// that a client in any namespace reaches the API server (and the nodes
// and pods, which the control plane routes to). A socket belongs to the
// namespace of the thread that creates it, and keeps it wherever it is
// used afterwards.
func (c *Cluster) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := netns.DoAt(c.ControlPlane, func() error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("kubelab: dial %s in the control plane's namespace: %w", addr, err)
	}
	return conn, nil
}

// RestConfig is a client-go configuration for the cluster's admin that
// dials through Dial, usable from any network namespace.
func (c *Cluster) RestConfig() *rest.Config {
	return &rest.Config{
		Host:            "https://" + c.APIServer.String(),
		BearerToken:     c.pki.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.caPEM},
		Dial:            c.Dial,
		QPS:             50,
		Burst:           100,
	}
}

// CA is the cluster's CA certificate (PEM), which signs the API
// server's.
func (c *Cluster) CA() []byte { return c.pki.caPEM }

// AdminToken is the bearer token of the cluster's admin.
func (c *Cluster) AdminToken() string { return c.pki.adminToken }

// Load builds the image spec describes, tags it, and loads it into every
// node's containerd through an archive in the lab's directory, removed
// once loaded.
func (c *Cluster) Load(ctx context.Context, spec image.Spec, tag string) error {
	img, err := image.Build(spec)
	if err != nil {
		return fmt.Errorf("kubelab: image %s: %w", tag, err)
	}
	archive := filepath.Join(c.dir, "load-"+strings.NewReplacer("/", "_", ":", "_").Replace(tag)+".tar")
	defer os.Remove(archive)
	if err := image.WriteArchive(archive, tag, img); err != nil {
		return err
	}
	return c.LoadImage(ctx, archive)
}

// LoadImage imports an image archive (`docker save` layout, as `cnbench
// image` writes) into every node's containerd, where kubelet finds it:
// pods then run it with imagePullPolicy Never or IfNotPresent.
func (c *Cluster) LoadImage(ctx context.Context, archive string) error {
	for _, n := range c.Nodes {
		if err := image.LoadContainerd(ctx, n.ContainerdSocket, "k8s.io", archive); err != nil {
			return fmt.Errorf("kubelab: load %s on %s: %w", archive, n.Name, err)
		}
	}
	return nil
}
