package kube

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"cnbench/internal/agent"
	"cnbench/internal/cluster"
	"cnbench/internal/netns"
)

// The networks a Kubernetes mode puts its endpoints on: what follows
// "k8s:" in the mode's name.
const (
	NetHostNetwork = "hostnetwork"
	NetPod         = "pod"
	NetService     = "service"
	NetNodePort    = "nodeport"
	NetHairpin     = "hairpin"
)

// agentName is what the agents' certificates name; the controller
// reaches them through forwarded ports, never by an address of theirs.
const agentName = "cnbench-agent"

// secretDir is where the agent's certificates are mounted.
const secretDir = "/etc/cnbench"

// Deployment is what Deploy created for one case.
type Deployment struct {
	c       *Cluster
	network string
	seq     string
	tok     netns.Token
	pki     *agent.Ephemeral
	eps     []cluster.Endpoint
	// pods hold the endpoints: one per role, or one for every role
	// (hairpin); container names are the roles.
	pods     map[string]string // role → pod
	nodes    map[string]Node   // role → node
	ports    map[string]int    // role → its agent's port
	secret   string
	forwards []func()

	mu sync.Mutex
	// services are the Services in front of the servers, by role, for the
	// modes that have them; fronts are what clients dial for each
	// published port of a server; probes the front of each server's
	// agent, which listens from the start; and reached the servers whose
	// Service a client has connected through.
	services map[string]string
	fronts   map[front]netip.AddrPort
	probes   map[string]netip.AddrPort
	reached  map[string]bool
}

// front is a published port of one server.
type front struct {
	role string
	port int
}

var _ cluster.Deployment = (*Deployment)(nil)
var _ cluster.Publisher = (*Deployment)(nil)
var _ cluster.Refuser = (*Deployment)(nil)

// Endpoints are the deployed pods; each one's agent answers at a port
// forwarded on this machine's loopback.
func (d *Deployment) Endpoints() []cluster.Endpoint { return d.eps }

// ClientTLS trusts the agents of this deployment and no one else.
func (d *Deployment) ClientTLS(serverName string) *tls.Config { return d.pki.ClientTLS(serverName) }

// Deploy starts one pod per role (one pod for all, for hairpin) on
// network, the servers' on the first node and the others on the second
// unless sameNode, waits until each agent answers, and forwards a port on
// this machine's loopback to each.
func (c *Cluster) Deploy(ctx context.Context, tok netns.Token, network string, roles []string, servers int, sameNode bool) (_ cluster.Deployment, err error) {
	switch network {
	case NetHostNetwork, NetPod, NetService, NetNodePort:
	case NetHairpin:
		if !sameNode {
			return nil, unsupported("hairpin is one pod, on one node")
		}
		if servers > 1 {
			return nil, unsupported("hairpin is one pod reaching itself through its Service: one server, not %d", servers)
		}
	default:
		return nil, unsupported("Kubernetes network %q: cnbench measures %s, %s, %s, %s and %s", network,
			NetHostNetwork, NetPod, NetService, NetNodePort, NetHairpin)
	}
	if !sameNode && len(c.Nodes) < 2 {
		return nil, unsupported("endpoints on two nodes need two nodes that take cnbench's pods; the cluster has %d", len(c.Nodes))
	}
	c.mu.Lock()
	ns, err := c.namespace(ctx, tok)
	c.deployed++
	seq := c.deployed
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	d := &Deployment{c: c, network: network, seq: strconv.Itoa(seq), tok: tok,
		pods: map[string]string{}, nodes: map[string]Node{}, ports: map[string]int{},
		services: map[string]string{}, fronts: map[front]netip.AddrPort{}, probes: map[string]netip.AddrPort{}, reached: map[string]bool{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Remove())
		}
	}()
	if d.pki, err = agent.NewEphemeral([]string{agentName}); err != nil {
		return nil, fmt.Errorf("kubernetes: certificates for the case: %w", err)
	}
	if err := d.createSecret(ctx, ns); err != nil {
		return nil, err
	}
	ports := d.ports
	for i, role := range roles {
		ports[role] = cluster.DeployedAt(c.cfg.ControlPort, seq, len(roles), i)
		d.nodes[role] = c.Nodes[0]
		if !sameNode && i >= servers {
			d.nodes[role] = c.Nodes[1]
		}
	}
	if err := d.createPods(ctx, ns, roles, ports); err != nil {
		return nil, err
	}
	return d, d.reach(ctx, ns, roles, ports)
}

// reach waits until every pod runs, then forwards each agent's port.
func (d *Deployment) reach(ctx context.Context, ns string, roles []string, ports map[string]int) error {
	ips := map[string]netip.Addr{}
	for _, role := range roles {
		pod := d.pods[role]
		if _, done := ips[pod]; done {
			continue
		}
		ip, err := d.c.waitReady(ctx, ns, pod)
		if err != nil {
			return fmt.Errorf("kubernetes: pod %s on %s: %w", pod, d.nodes[role].Name, err)
		}
		ips[pod] = ip
	}
	for _, role := range roles {
		pod := d.pods[role]
		local, stop, err := d.c.forward(ctx, ns, pod, ports[role])
		if err != nil {
			return fmt.Errorf("kubernetes: forward to pod %s port %d: %w", pod, ports[role], err)
		}
		d.forwards = append(d.forwards, stop)
		ep := cluster.Endpoint{Role: role, Node: d.nodes[role].Name, Control: local, ServerName: agentName, Addr: ips[pod]}
		switch d.network {
		case NetHostNetwork:
			ep.Netns = "node/" + ep.Node
		case NetHairpin:
			ep.Netns = "pod/" + pod
		}
		d.eps = append(d.eps, ep)
	}
	return nil
}

// createSecret hands the agents their certificates.
func (d *Deployment) createSecret(ctx context.Context, ns string) error {
	d.secret = d.tok.Name("pki" + d.seq)
	_, err := d.c.cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: d.secret, Labels: d.labels("")},
		Data:       map[string][]byte{"ca.pem": d.pki.CA, "agent.pem": d.pki.Cert, "agent-key.pem": d.pki.Key},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("kubernetes: create secret %s: %w", d.secret, err)
	}
	return nil
}

// labels are every object's; pod names the pod a Service selects.
func (d *Deployment) labels(pod string) map[string]string {
	l := map[string]string{TokenLabel: string(d.tok), "cnbench.deployment": d.seq}
	if pod != "" {
		l["cnbench.pod"] = pod
	}
	return l
}

// createPods creates the case's pods: one per role, or for hairpin one
// whose containers are the roles.
//
// Equivalent to `kubectl apply` of pods such as:
//
//	metadata: {name: cnb-TOKEN-s1-N, labels: {cnbench.token: TOKEN}}
//	spec:
//	  affinity: {nodeAffinity: ... metadata.name In [NODE]}
//	  hostNetwork: true                  # k8s:hostnetwork only
//	  containers:
//	  - name: s1
//	    image: IMAGE
//	    command: [/cnbench, agent, --container, --listen, ":PORT", --ca, ...]
//	    volumeMounts: [{name: pki, mountPath: /etc/cnbench}]
//	  volumes: [{name: pki, secret: {secretName: cnb-TOKEN-pkiN}}]
func (d *Deployment) createPods(ctx context.Context, ns string, roles []string, ports map[string]int) error {
	groups := [][]string{}
	if d.network == NetHairpin {
		groups = append(groups, roles)
	} else {
		for _, r := range roles {
			groups = append(groups, []string{r})
		}
	}
	for _, g := range groups {
		name := d.tok.Name(g[0] + "-" + d.seq)
		if len(g) > 1 {
			name = d.tok.Name("pod-" + d.seq)
		}
		pod := d.podSpec(name, d.nodes[g[0]].Name)
		for _, role := range g {
			pod.Spec.Containers = append(pod.Spec.Containers, d.container(role, ports[role]))
			d.pods[role] = name
		}
		if _, err := d.c.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("kubernetes: create pod %s on %s: %w", name, d.nodes[g[0]].Name, err)
		}
	}
	return nil
}

func (d *Deployment) podSpec(name, node string) *corev1.Pod {
	grace, no := int64(1), false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: d.labels(name)},
		Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
				}}},
			}},
			Tolerations:                   d.c.tolerations(),
			HostNetwork:                   d.network == NetHostNetwork,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			EnableServiceLinks:            &no,
			AutomountServiceAccountToken:  &no,
			Volumes: []corev1.Volume{{Name: "pki", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: d.secret}}}},
		},
	}
}

// container runs the agent of role on port. It is ready once the agent
// listens, so that nothing dials it, and no Service sends to it, sooner.
func (d *Deployment) container(role string, port int) corev1.Container {
	return corev1.Container{
		Name:            role,
		Image:           d.c.cfg.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"/cnbench", "agent", "--container", "--listen", ":" + strconv.Itoa(port),
			"--ca", secretDir + "/ca.pem", "--cert", secretDir + "/agent.pem", "--key", secretDir + "/agent-key.pem",
			"--timeout", "30s"},
		VolumeMounts: []corev1.VolumeMount{{Name: "pki", MountPath: secretDir, ReadOnly: true}},
		// An agent that exits on an error says why in its log's last
		// lines, which then stand as the container's message, and so
		// in the case's reason: a hostNetwork agent's port taken on its
		// node by another run's had ended with an empty one.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
			PeriodSeconds: 1,
		},
	}
}

// Remove ends the port forwards and deletes the case's Services, pods
// and Secret, waiting until the pods are gone. It goes on past errors.
func (d *Deployment) Remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, stop := range d.forwards {
		stop()
	}
	d.forwards = nil
	core := d.c.cs.CoreV1()
	ns := d.c.ns
	var errs []error
	gone := func(err error) bool { return err == nil || apierrors.IsNotFound(err) }
	d.mu.Lock()
	for role, svc := range d.services {
		if err := core.Services(ns).Delete(ctx, svc, metav1.DeleteOptions{}); !gone(err) {
			errs = append(errs, fmt.Errorf("kubernetes: delete service %s: %w", svc, err))
		}
		delete(d.services, role)
	}
	d.mu.Unlock()
	zero := int64(0)
	pods := map[string]bool{}
	for _, p := range d.pods {
		pods[p] = true
	}
	for p := range pods {
		if err := core.Pods(ns).Delete(ctx, p, metav1.DeleteOptions{GracePeriodSeconds: &zero}); !gone(err) {
			errs = append(errs, fmt.Errorf("kubernetes: delete pod %s: %w", p, err))
		}
	}
	for p := range pods {
		errs = append(errs, d.c.waitGone(ctx, ns, p))
	}
	if d.secret != "" {
		if err := core.Secrets(ns).Delete(ctx, d.secret, metav1.DeleteOptions{}); !gone(err) {
			errs = append(errs, fmt.Errorf("kubernetes: delete secret %s: %w", d.secret, err))
		}
	}
	return errors.Join(errs...)
}
