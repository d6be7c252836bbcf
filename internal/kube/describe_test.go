package kube

import (
	"strings"
	"testing"
)

// A node's CNI is read from what its agent writes on it, whatever
// deployed the agent; a node with no such annotation names none.
func TestNodeCNIFromAnnotations(t *testing.T) {
	cases := []struct {
		annotations map[string]string
		want        string
	}{
		{map[string]string{"flannel.alpha.coreos.com/backend-type": "vxlan", "flannel.alpha.coreos.com/public-ip": "10.0.0.2"}, "flannel, backend vxlan"},
		{map[string]string{"projectcalico.org/IPv4Address": "10.0.0.3/24"}, "calico, node address 10.0.0.3/24"},
		{map[string]string{"network.cilium.io/ipv4-cilium-host": "10.1.0.1"}, "cilium, host address 10.1.0.1"},
		{map[string]string{"node.alpha.kubernetes.io/ttl": "0"}, ""},
		{nil, ""},
	}
	for _, c := range cases {
		got := nodeCNI(c.annotations)
		if c.want == "" && got != "" || !strings.HasPrefix(got, c.want) {
			t.Errorf("nodeCNI(%v) = %q, want %q...", c.annotations, got, c.want)
		}
	}
}
