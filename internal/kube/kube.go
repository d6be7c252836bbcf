// Package kube deploys cnbench's engines in pods on an existing
// Kubernetes cluster, through its API server only, and removes them.
//
// Each endpoint is a pod of cnbench's image on a chosen node, running
// `cnbench agent --container`: the pod is the endpoint, and its agent
// answers the controller over mutual TLS with a certificate authority
// made for the case alone and handed over as a Secret. The controller
// reaches each agent through the API server's port forwarding, as
// `kubectl port-forward` does, so it needs no route to pod or node
// addresses. The engines' traffic takes the path the mode names: pod to
// pod IP, a ClusterIP or NodePort Service in front of the server, the
// nodes' own network (hostNetwork pods), or one pod to itself through
// its Service (hairpin). Every object lives in one namespace, carries
// the label cnbench.token and the run's name prefix, and is removed
// after its case; a namespace cnbench created is deleted at the end.
package kube

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"cnbench/internal/cluster"
	"cnbench/internal/mode"
	"cnbench/internal/netns"
)

// Config is where the cluster is and where on it to place pods.
type Config = cluster.Kubernetes

// TokenLabel marks every object cnbench creates with its run's token.
const TokenLabel = "cnbench.token"

// DefaultControlPort is the first agent port in the pods.
const DefaultControlPort = 7441

// Node is a node cnbench places pods on.
type Node struct {
	Name string
	Addr netip.Addr // its InternalIP, where a NodePort answers
}

// Cluster is a connection to a Kubernetes API server.
type Cluster struct {
	cfg  Config
	rest *rest.Config
	cs   kubernetes.Interface
	// meta reads and deletes objects of any kind by their metadata alone.
	meta  metadata.Interface
	Nodes []Node
	// ns is the namespace objects go in; owned when cnbench created it.
	ns    string
	owned bool
	// deployed numbers deployments, so that no name of one is taken by
	// an object of the one before that the cluster still removes; mu
	// guards it and the namespace, for deployments made at once.
	deployed int
	mu       sync.Mutex
	// about is what Describe read of the whole cluster, once.
	about struct {
		once sync.Once
		d    Description
	}
}

var _ cluster.Cluster = (*Cluster)(nil)

// Connect reads the kubeconfig, asks the API server its version and
// finds the nodes to use.
func Connect(ctx context.Context, cfg Config) (*Cluster, error) {
	c, err := dial(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.findNodes(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// dial reads the kubeconfig and asks the API server its version.
func dial(cfg Config) (*Cluster, error) {
	// client-go logs what it recovers from (a forwarded connection the
	// engine closed) on stderr, between the run's progress lines; what
	// matters reaches cnbench as errors.
	klog.SetLogger(logr.Discard())
	if cfg.ControlPort == 0 {
		cfg.ControlPort = DefaultControlPort
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.Kubeconfig != "" {
		rules.ExplicitPath = cfg.Kubeconfig
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: kubeconfig: %w", err)
	}
	if cfg.Dial != nil {
		rc.Dial = cfg.Dial
	}
	rc.QPS, rc.Burst = 50, 100
	rc.UserAgent = "cnbench"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	// A cluster that does not answer is known at once, not after the
	// first pod's time-out.
	quick := rest.CopyConfig(rc)
	quick.Timeout = 15 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(quick)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	if _, err := dc.ServerVersion(); err != nil {
		return nil, fmt.Errorf("kubernetes: API server %s: %w", rc.Host, err)
	}
	meta, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	return &Cluster{cfg: cfg, rest: rc, cs: cs, meta: meta, ns: cfg.Namespace}, nil
}

// findNodes takes the configured nodes, or else chooses up to two.
func (c *Cluster) findNodes(ctx context.Context) error {
	list, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("kubernetes: list nodes: %w", err)
	}
	byName := map[string]*corev1.Node{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	if len(c.cfg.Nodes) > 0 {
		for _, name := range c.cfg.Nodes {
			n, ok := byName[name]
			if !ok {
				return fmt.Errorf("kubernetes node %q: no such node", name)
			}
			if why := c.unusable(n); why != "" {
				return fmt.Errorf("kubernetes node %q: %s", name, why)
			}
			c.Nodes = append(c.Nodes, Node{Name: name, Addr: internalIP(n)})
		}
		return nil
	}
	var why []string
	for _, n := range list.Items {
		if reason := c.unusable(&n); reason != "" {
			why = append(why, n.Name+": "+reason)
			continue
		}
		if len(c.Nodes) < 2 {
			c.Nodes = append(c.Nodes, Node{Name: n.Name, Addr: internalIP(&n)})
		}
	}
	if len(c.Nodes) == 0 {
		return fmt.Errorf("kubernetes: no node takes cnbench's pods (%d nodes; %s)", len(list.Items), strings.Join(why, "; "))
	}
	return nil
}

// unusable says why pods cannot go on n, or "" if they can.
func (c *Cluster) unusable(n *corev1.Node) string {
	ready, why := false, ""
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = cond.Status == corev1.ConditionTrue
			// A node without a working CNI says so here: "container
			// runtime network not ready: ... cni plugin not initialized".
			why = strings.Trim(cond.Reason+": "+cond.Message, ": ")
		}
	}
	switch {
	case !ready:
		return strings.TrimSuffix("not Ready ("+why+")", " ()")
	case n.Spec.Unschedulable:
		return "cordoned"
	case !internalIP(n).IsValid():
		return "no IPv4 InternalIP"
	}
	for k, v := range c.cfg.NodeSelector {
		if n.Labels[k] != v {
			return fmt.Sprintf("no label %s=%s", k, v)
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(c.tolerations(), func(tol corev1.Toleration) bool { return tol.ToleratesTaint(&t) }) {
			return fmt.Sprintf("taint %s=%s:%s not tolerated", t.Key, t.Value, t.Effect)
		}
	}
	return ""
}

// internalIP is a node's IPv4 InternalIP; cnbench's agents number IPv4
// only.
func internalIP(n *corev1.Node) netip.Addr {
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() {
			return ip
		}
	}
	return netip.Addr{}
}

func (c *Cluster) tolerations() []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range c.cfg.Tolerations {
		out = append(out, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator),
			Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	return out
}

// namespace makes the run's namespace on first use, unless the
// configuration names one.
func (c *Cluster) namespace(ctx context.Context, tok netns.Token) (string, error) {
	if c.ns != "" {
		return c.ns, nil
	}
	name := tok.Name("k8s")
	// Equivalent to: kubectl create namespace cnb-TOKEN-k8s; kubectl label namespace cnb-TOKEN-k8s cnbench.token=TOKEN
	_, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: map[string]string{TokenLabel: string(tok)}}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("kubernetes: create namespace %s: %w", name, err)
	}
	c.ns, c.owned = name, true
	return name, nil
}

// Close deletes the namespace cnbench created, waiting until it is gone.
func (c *Cluster) Close() error {
	if !c.owned {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err := c.cs.CoreV1().Namespaces().Delete(ctx, c.ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("kubernetes: delete namespace %s: %w", c.ns, err)
	}
	return awaitGone(ctx, "namespace "+c.ns, func(ctx context.Context) error {
		_, err := c.cs.CoreV1().Namespaces().Get(ctx, c.ns, metav1.GetOptions{})
		return err
	})
}

// Leftovers lists what of run tok still exists on the cluster.
func (c *Cluster) Leftovers(ctx context.Context, tok netns.Token) ([]string, error) {
	objs, err := c.labelled(ctx, TokenLabel+"="+string(tok))
	var out []string
	for _, o := range objs {
		out = append(out, o.String())
	}
	return out, err
}

// kinds are the kinds of object cnbench creates on a cluster, namespaces
// first.
var kinds = []struct {
	name string
	gvr  schema.GroupVersionResource
}{
	{"namespace", corev1.SchemeGroupVersion.WithResource("namespaces")},
	{"pod", corev1.SchemeGroupVersion.WithResource("pods")},
	{"service", corev1.SchemeGroupVersion.WithResource("services")},
	{"secret", corev1.SchemeGroupVersion.WithResource("secrets")},
}

// object is something cnbench created on a cluster.
type object struct {
	kind, namespace, name string
	gvr                   schema.GroupVersionResource
	token                 netns.Token
}

func (o object) String() string {
	if o.kind == "namespace" {
		return "namespace " + o.name
	}
	return o.kind + " " + o.namespace + "/" + o.name
}

// labelled lists the objects of every kind that carry selector, in every
// namespace, namespaces first.
func (c *Cluster) labelled(ctx context.Context, selector string) ([]object, error) {
	var out []object
	var errs []error
	for _, k := range kinds {
		l, err := c.meta.Resource(k.gvr).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			errs = append(errs, fmt.Errorf("list %ss: %w", k.name, err))
			continue
		}
		for _, m := range l.Items {
			out = append(out, object{kind: k.name, namespace: m.Namespace, name: m.Name, gvr: k.gvr, token: netns.Token(m.Labels[TokenLabel])})
		}
	}
	return out, errors.Join(errs...)
}

// unsupported is a skip: what the cluster cannot give.
func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", mode.ErrUnsupported, fmt.Sprintf(format, args...))
}
