package scenario

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"cnbench/internal/cluster"
)

// TestKubernetesSection reads every key of the kubernetes section, a
// relative kubeconfig from the scenario's directory, and writes it back
// so that a stored run's document names the same cluster.
func TestKubernetesSection(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "kube"), 0o755)
	os.WriteFile(filepath.Join(dir, "kube", "admin.conf"), []byte("apiVersion: v1\nkind: Config\n"), 0o600)
	doc := `modes: host
topologies: chhc
workloads: tcp_stream
kubernetes:
  kubeconfig: kube/admin.conf
  context: lab
  namespace: perf
  image: registry.example/cnbench:1
  nodes: [n1, n2]
  node_selector: {kubernetes.io/os: linux, pool: perf}
  tolerations:
    - {key: dedicated, operator: Equal, value: perf, effect: NoSchedule}
    - {operator: Exists}
  control_port: 9100
`
	s, err := Parse(filepath.Join(dir, "s.yaml"), []byte(doc), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	want := &Kubernetes{Kubeconfig: filepath.Join(dir, "kube", "admin.conf"), Context: "lab", Namespace: "perf",
		Image: "registry.example/cnbench:1", Nodes: []string{"n1", "n2"},
		NodeSelector: map[string]string{"kubernetes.io/os": "linux", "pool": "perf"},
		Tolerations:  []cluster.Toleration{{Key: "dedicated", Operator: "Equal", Value: "perf", Effect: "NoSchedule"}, {Operator: "Exists"}},
		ControlPort:  9100}
	if !reflect.DeepEqual(s.Kubernetes, want) {
		t.Errorf("kubernetes: got %+v, want %+v", s.Kubernetes, want)
	}
	out, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(filepath.Join(t.TempDir(), "x.yaml"), out, testVocab)
	// The stored document names the file by its absolute path.
	if err != nil {
		t.Fatalf("the stored document does not parse: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(again.Kubernetes, s.Kubernetes) {
		t.Errorf("round trip changed the kubernetes section: got %+v\n%s", again.Kubernetes, out)
	}
}

func TestKubernetesSectionRefused(t *testing.T) {
	base := "modes: host\ntopologies: chc\nworkloads: tcp_stream\n"
	for _, c := range []struct{ doc, path, msg string }{
		{"kubernetes: [a]", "kubernetes", "expected a mapping"},
		{"kubernetes: {kubeconfg: x}", "kubernetes.kubeconfg", "unknown key"},
		{"kubernetes: {kubeconfig: /nonexistent/admin.conf}", "kubernetes.kubeconfig", "no such file"},
		{"kubernetes: {kubeconfig: /dev/zero}", "kubernetes.kubeconfig", "not a regular file"},
		{"kubernetes: {nodes: [a, b, c]}", "kubernetes.nodes", "one or two"},
		{"kubernetes: {control_port: 70000}", "kubernetes.control_port", "out of range"},
		{"kubernetes: {node_selector: [a]}", "kubernetes.node_selector", "mapping of label keys"},
		{"kubernetes: {tolerations: [{operator: Maybe}]}", "kubernetes.tolerations[0].operator", "Equal or Exists"},
		{"kubernetes: {tolerations: [{effect: Never}]}", "kubernetes.tolerations[0].effect", "NoSchedule"},
		{"kubernetes: {tolerations: [{keys: a}]}", "kubernetes.tolerations[0].keys", "unknown key"},
	} {
		_, err := Parse("s.yaml", []byte(base+c.doc+"\n"), testVocab)
		if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want an error at %s saying %q", c.doc, err, c.path, c.msg)
		}
	}
}
