package kube

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// serviceLimit bounds the wait for a Service to carry traffic: its
// endpoints published and the nodes' proxies programmed.
const serviceLimit = time.Minute

// Refuses ping where the client dials a Service: a ClusterIP answers no
// echo, and a NodePort's node answers it itself, not the server's pod.
func (d *Deployment) Refuses(workload string) error {
	if workload == "ping" && d.network != NetPod && d.network != NetHostNetwork {
		return fmt.Errorf("ping on k8s:%s: a Service forwards TCP and UDP; its address answers no echo, or the node does in the pod's stead", d.network)
	}
	return nil
}

// Publish puts a Service in front of ports of role's pod, for the modes
// whose clients dial one, and returns what they dial, one per port.
func (d *Deployment) Publish(ctx context.Context, role string, ports []int) ([]netip.AddrPort, error) {
	if d.network == NetPod || d.network == NetHostNetwork || len(ports) == 0 {
		return nil, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	targets, probe, err := d.createService(ctx, role, ports)
	if err != nil {
		return nil, err
	}
	for i, p := range ports {
		d.fronts[front{role, p}] = targets[i]
	}
	d.probes[role] = probe
	return targets, nil
}

// Expose returns what the client dials to reach port of the endpoint of
// role: the pod's own address, or the Service in front of it, once the
// client's pod reaches the server through it.
func (d *Deployment) Expose(ctx context.Context, role string, port int) (netip.AddrPort, error) {
	if d.network == NetPod || d.network == NetHostNetwork {
		for _, ep := range d.eps {
			if ep.Role == role {
				return netip.AddrPortFrom(ep.Addr, uint16(port)), nil
			}
		}
		return netip.AddrPort{}, fmt.Errorf("kubernetes: no endpoint %s", role)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	f := front{role, port}
	target, ok := d.fronts[f]
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("kubernetes: port %d of %s has no Service; the case published %v", port, role, d.published(role))
	}
	// A proxy programs a Service's ports together, so the agent's port,
	// which listens from the start, stands for all: an engine's may
	// listen for UDP only (sockperf's), or not until its test runs
	// (netperf's data port).
	if !d.reached[role] {
		if err := d.awaitService(ctx, d.services[role], d.probes[role]); err != nil {
			return netip.AddrPort{}, err
		}
		d.reached[role] = true
	}
	return target, nil
}

// published are the ports of role that have a Service.
func (d *Deployment) published(role string) []int {
	var ports []int
	for f := range d.fronts {
		if f.role == role {
			ports = append(ports, f.port)
		}
	}
	slices.Sort(ports)
	return ports
}

// createService puts one Service in front of ports of role's pod, for
// TCP and for UDP: the engines' UDP workloads send to the port their
// TCP control connection takes. It also carries, over TCP, a port of its
// own to the agent's, which listens from the start: the probe that shows
// the Service's rules in place. It returns what clients dial for each
// port, and the probe's front.
//
// The Service is made with its TCP ports, and its UDP ports join with
// the probe in one update: a NodePort's UDP port must be its TCP port's
// number, which the cluster chooses on creation. As the probe exists
// only in the updated Service, a connection through it shows that the
// node's proxy has the update, UDP ports included, and their endpoints,
// which the same EndpointSlice lists; a probe made with the TCP ports
// once answered while the UDP ports still had no endpoints, and the
// proxy refused the first datagrams (iperf3: connection refused).
//
// Equivalent to: kubectl expose pod cnb-TOKEN-s1-N --port PORT,... --protocol TCP [--type NodePort] --name cnb-TOKEN-svcN-s1,
// then kubectl edit to add each PORT for UDP and the probe.
func (d *Deployment) createService(ctx context.Context, role string, ports []int) (targets []netip.AddrPort, probe netip.AddrPort, err error) {
	name := d.tok.Name("svc" + d.seq + "-" + role)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: d.labels("")},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"cnbench.pod": d.pods[role], TokenLabel: string(d.tok)},
			Ports:    servicePorts(ports, corev1.ProtocolTCP, nil),
		},
	}
	if d.network == NetNodePort {
		svc.Spec.Type = corev1.ServiceTypeNodePort
	}
	services := d.c.cs.CoreV1().Services(d.c.ns)
	made, err := services.Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return nil, probe, fmt.Errorf("kubernetes: create service %s: %w", name, err)
	}
	d.services[role] = name
	made.Spec.Ports = append(made.Spec.Ports, servicePorts(ports, corev1.ProtocolUDP, made.Spec.Ports)...)
	made.Spec.Ports = append(made.Spec.Ports, corev1.ServicePort{Name: "probe", Protocol: corev1.ProtocolTCP,
		Port: int32(probePort(ports)), TargetPort: intstr.FromInt32(int32(d.ports[role]))})
	if made, err = services.Update(ctx, made, metav1.UpdateOptions{}); err != nil {
		return nil, probe, fmt.Errorf("kubernetes: service %s: add its UDP ports and probe: %w", name, err)
	}
	ip, err := netip.ParseAddr(made.Spec.ClusterIP)
	if d.network != NetNodePort && (err != nil || !ip.Is4()) {
		return nil, probe, fmt.Errorf("kubernetes: service %s: ClusterIP %q is not IPv4, which cnbench's agents number", name, made.Spec.ClusterIP)
	}
	front := func(sp corev1.ServicePort) netip.AddrPort {
		if d.network == NetNodePort {
			return netip.AddrPortFrom(d.nodes[role].Addr, uint16(sp.NodePort))
		}
		return netip.AddrPortFrom(ip, uint16(sp.Port))
	}
	for _, sp := range made.Spec.Ports[:len(ports)] {
		targets = append(targets, front(sp))
	}
	return targets, front(made.Spec.Ports[len(made.Spec.Ports)-1]), nil
}

// probePort is a Service port for the probe that none of ports is.
func probePort(ports []int) int {
	p := 65535
	for slices.Contains(ports, p) {
		p--
	}
	return p
}

// servicePorts are a Service's ports of protocol for ports, on the node
// ports of tcp's where given.
func servicePorts(ports []int, protocol corev1.Protocol, tcp []corev1.ServicePort) []corev1.ServicePort {
	var out []corev1.ServicePort
	for i, p := range ports {
		sp := corev1.ServicePort{Name: strings.ToLower(string(protocol)) + "-" + strconv.Itoa(p), Protocol: protocol,
			Port: int32(p), TargetPort: intstr.FromInt32(int32(p))}
		if tcp != nil {
			sp.NodePort = tcp[i].NodePort
		}
		out = append(out, sp)
	}
	return out
}

// awaitService waits until the endpoints of Service svc list its server
// ready, then until a client's pod connects to target: a proxy programs
// its rules some time after the endpoints change, and the case's first
// connection must not race it. The clients share a node, and so its
// proxy's rules.
func (d *Deployment) awaitService(ctx context.Context, svc string, target netip.AddrPort) error {
	ctx, cancel := context.WithTimeout(ctx, serviceLimit)
	defer cancel()
	for {
		slices, err := d.c.cs.DiscoveryV1().EndpointSlices(d.c.ns).List(ctx,
			metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
		if err != nil {
			return fmt.Errorf("kubernetes: endpoints of service %s: %w", svc, err)
		}
		if anyReady(slices.Items) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubernetes: service %s has no ready endpoint after %s", svc, serviceLimit)
		case <-time.After(100 * time.Millisecond):
		}
	}
	client := d.eps[len(d.eps)-1]
	out, err := d.c.exec(ctx, d.c.ns, d.pods[client.Role], client.Role,
		[]string{"/cnbench", "reach", target.String(), "--within", serviceLimit.String()})
	if err != nil {
		return fmt.Errorf("kubernetes: the client pod did not reach service %s at %s: %w: %s", svc, target, err, out)
	}
	return nil
}

func anyReady(slices []discoveryv1.EndpointSlice) bool {
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				return true
			}
		}
	}
	return false
}
