package kube

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// serviceLimit bounds the wait for a Service to carry traffic: its
// endpoints published and the nodes' proxies programmed.
const serviceLimit = time.Minute

// Expose returns what the client dials to reach port of the endpoint of
// role: the pod's own address, or a Service in front of it, made on the
// first call for that port and ready once the client's pod reaches it.
func (d *Deployment) Expose(ctx context.Context, role string, port int) (netip.AddrPort, error) {
	var server netip.Addr
	for _, ep := range d.eps {
		if ep.Role == role {
			server = ep.Addr
		}
	}
	if d.network == NetPod || d.network == NetHostNetwork {
		return netip.AddrPortFrom(server, uint16(port)), nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if target, ok := d.exposed[port]; ok {
		return target, nil
	}
	target, err := d.createService(ctx, role, port)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if err := d.awaitService(ctx, port, target); err != nil {
		return netip.AddrPort{}, err
	}
	d.exposed[port] = target
	return target, nil
}

// createService puts a Service in front of port of role's pod.
//
// Equivalent to: kubectl expose pod cnb-TOKEN-s1-N --port PORT [--type NodePort] --name cnb-TOKEN-svcN-PORT
func (d *Deployment) createService(ctx context.Context, role string, port int) (netip.AddrPort, error) {
	name := d.tok.Name("svc" + d.seq + "-" + strconv.Itoa(port))
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: d.labels("")},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"cnbench.pod": d.pods[role], TokenLabel: string(d.tok)},
			Ports: []corev1.ServicePort{{Name: "tcp", Protocol: corev1.ProtocolTCP, Port: int32(port),
				TargetPort: intstr.FromInt32(int32(port))}},
		},
	}
	if d.network == NetNodePort {
		svc.Spec.Type = corev1.ServiceTypeNodePort
	}
	made, err := d.c.cs.CoreV1().Services(d.c.ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("kubernetes: create service %s: %w", name, err)
	}
	d.services = append(d.services, name)
	if d.network == NetNodePort {
		return netip.AddrPortFrom(d.nodes[role].Addr, uint16(made.Spec.Ports[0].NodePort)), nil
	}
	ip, err := netip.ParseAddr(made.Spec.ClusterIP)
	if err != nil || !ip.Is4() {
		return netip.AddrPort{}, fmt.Errorf("kubernetes: service %s: ClusterIP %q is not IPv4, which cnbench's agents number", name, made.Spec.ClusterIP)
	}
	return netip.AddrPortFrom(ip, uint16(port)), nil
}

// awaitService waits until the Service's endpoints list the server
// ready, then until the client's pod connects to target: a proxy
// programs its rules some time after the endpoints change, and the
// case's first connection must not race it.
func (d *Deployment) awaitService(ctx context.Context, port int, target netip.AddrPort) error {
	ctx, cancel := context.WithTimeout(ctx, serviceLimit)
	defer cancel()
	svc := d.services[len(d.services)-1]
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
