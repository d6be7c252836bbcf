package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apispdy "k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
)

// podStartLimit bounds the wait for a pod to run and its agents to
// listen: an image pulled from a registry over a slow link included.
const podStartLimit = 3 * time.Minute

// failedWaiting are the reasons a container waits for that it will not
// get past by itself (or only after back-offs far longer than a case).
var failedWaiting = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true, "CrashLoopBackOff": true,
}

// waitReady waits until the pod's containers are all ready and returns
// its IP. A pod that cannot start fails at once, with what the cluster
// says of it (its container's state and its latest warning event).
func (c *Cluster) waitReady(ctx context.Context, ns, name string) (netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, podStartLimit)
	defer cancel()
	for {
		pod, err := c.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return netip.Addr{}, err
		}
		if why := podFailed(pod); why != "" {
			return netip.Addr{}, fmt.Errorf("%s%s", why, c.lastWarning(ns, name))
		}
		if podReady(pod) {
			ip, err := netip.ParseAddr(pod.Status.PodIP)
			if err != nil {
				return netip.Addr{}, fmt.Errorf("pod IP %q: %w", pod.Status.PodIP, err)
			}
			return ip, nil
		}
		select {
		case <-ctx.Done():
			return netip.Addr{}, fmt.Errorf("not ready after %s (phase %s)%s", podStartLimit, pod.Status.Phase, c.lastWarning(ns, name))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if !s.Ready {
			return false
		}
	}
	return true
}

// podFailed says why a pod will not run, or "".
func podFailed(p *corev1.Pod) string {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return fmt.Sprintf("pod %s: %s %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
			return "unschedulable: " + cond.Message
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil && failedWaiting[w.Reason] {
			return fmt.Sprintf("container %s: %s: %s", s.Name, w.Reason, w.Message)
		}
		if t := s.State.Terminated; t != nil {
			return fmt.Sprintf("container %s ended: %s, exit code %d: %s", s.Name, t.Reason, t.ExitCode, strings.TrimSpace(t.Message))
		}
	}
	return ""
}

// lastWarning is the pod's latest warning event, as kubectl describe
// shows it, or "".
func (c *Cluster) lastWarning(ns, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evs, err := c.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",type=Warning"})
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	sort.Slice(evs.Items, func(i, j int) bool { return evs.Items[i].LastTimestamp.Before(&evs.Items[j].LastTimestamp) })
	e := evs.Items[len(evs.Items)-1]
	return fmt.Sprintf(" (event %s: %s)", e.Reason, strings.TrimSpace(e.Message))
}

// waitGone waits until a deleted pod no longer exists.
func (c *Cluster) waitGone(ctx context.Context, ns, name string) error {
	return awaitGone(ctx, "pod "+name, func(ctx context.Context) error {
		_, err := c.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	})
}

// awaitGone reads a deleted object with get until the cluster no longer
// finds it: deletion returns while a pod stops or a namespace empties.
func awaitGone(ctx context.Context, what string, get func(context.Context) error) error {
	for {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubernetes: %s still there: %w", what, errors.Join(err, ctx.Err()))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// forward listens on a free port of this machine's loopback and
// forwards every connection to port in the pod through the API server,
// as `kubectl port-forward POD :PORT` does.
func (c *Cluster) forward(ctx context.Context, ns, pod string, port int) (netip.AddrPort, func(), error) {
	transport, upgrader, err := c.streams()
	if err != nil {
		return netip.AddrPort{}, nil, err
	}
	url := c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return netip.AddrPort{}, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		return netip.AddrPort{}, nil, err
	case <-ctx.Done():
		close(stop)
		return netip.AddrPort{}, nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		close(stop)
		return netip.AddrPort{}, nil, fmt.Errorf("forwarded ports %v: %w", ports, err)
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ports[0].Local), func() { close(stop); <-done }, nil
}

// exec runs command in a container of a pod and returns its output, as
// `kubectl exec` does; a command that exits non-zero is an error.
func (c *Cluster) exec(ctx context.Context, ns, pod, container string, command []string) (string, error) {
	req := c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	transport, upgrader, err := c.streams()
	if err != nil {
		return "", err
	}
	ex, err := remotecommand.NewSPDYExecutorForTransports(transport, upgrader, http.MethodPost, req.URL())
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out})
	return strings.TrimSpace(out.String()), err
}

// streams is the transport of the API server's streaming calls (port
// forwarding, exec). client-go's own dials the API server itself,
// ignoring the configuration's Dial; where one is given (a cluster that
// answers in another network namespace), every connection must take it,
// or it would leave by this machine's own routes.
func (c *Cluster) streams() (http.RoundTripper, spdy.Upgrader, error) {
	if c.rest.Dial == nil {
		return spdy.RoundTripperFor(c.rest)
	}
	tlsConfig, err := rest.TLSConfigFor(c.rest)
	if err != nil {
		return nil, nil, err
	}
	rt, err := apispdy.NewRoundTripperWithConfig(apispdy.RoundTripperConfig{
		UpgradeTransport: &http.Transport{DialContext: c.rest.Dial, TLSClientConfig: tlsConfig},
		PingPeriod:       5 * time.Second,
	})
	if err != nil {
		return nil, nil, err
	}
	wrapped, err := rest.HTTPWrappersForConfig(c.rest, rt)
	return wrapped, rt, err
}
