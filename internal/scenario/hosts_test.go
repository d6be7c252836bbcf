package scenario

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestHostsAndSwarmSections(t *testing.T) {
	doc := `modes: host
topologies: chhc
workloads: tcp_stream
hosts:
  h2: {agent: "10.0.0.12:7443", ca: certs/ca.pem, cert: certs/controller.pem, key: /abs/controller-key.pem}
  h1: {agent: "lab1.example:7443", ca: certs/ca.pem, cert: certs/controller.pem, key: certs/controller-key.pem}
swarm: {manager: "unix:///run/m.sock", nodes: [node-a, node-b], control_port: 9000}
`
	s, err := Parse("/etc/bench/s.yaml", []byte(doc), testVocab)
	if err != nil {
		t.Fatal(err)
	}
	want := []Host{
		{Name: "h1", Agent: "lab1.example:7443", CA: "/etc/bench/certs/ca.pem", Cert: "/etc/bench/certs/controller.pem", Key: "/etc/bench/certs/controller-key.pem"},
		{Name: "h2", Agent: "10.0.0.12:7443", CA: "/etc/bench/certs/ca.pem", Cert: "/etc/bench/certs/controller.pem", Key: "/abs/controller-key.pem"},
	}
	if !reflect.DeepEqual(s.Hosts, want) {
		t.Errorf("hosts: got %+v, want %+v (sorted, paths from the file's directory)", s.Hosts, want)
	}
	if s.Swarm == nil || s.Swarm.Manager != "unix:///run/m.sock" || !reflect.DeepEqual(s.Swarm.Nodes, []string{"node-a", "node-b"}) || s.Swarm.ControlPort != 9000 {
		t.Errorf("swarm: got %+v", s.Swarm)
	}
	out, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(filepath.Join(t.TempDir(), "x.yaml"), out, testVocab)
	if err != nil {
		t.Fatalf("the stored document does not parse: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(again.Hosts, s.Hosts) || !reflect.DeepEqual(again.Swarm, s.Swarm) {
		t.Errorf("round trip changed hosts or swarm:\n%s", out)
	}
}

func TestHostsAndSwarmRefused(t *testing.T) {
	base := "modes: host\ntopologies: chhc\nworkloads: tcp_stream\n"
	for _, c := range []struct{ doc, path, msg string }{
		{"hosts: {eth0: {agent: \"a:1\", ca: c, cert: c, key: k}}", "hosts.eth0", "expected h1, h2"},
		{"hosts: {h1: {agent: \"a\", ca: c, cert: c, key: k}}", "hosts.h1.agent", "HOST:PORT"},
		{"hosts: {h1: {agent: \"a:99999\", ca: c, cert: c, key: k}}", "hosts.h1.agent", "out of range"},
		{"hosts: {h1: {agent: \"a:1\", ca: c, cert: c}}", "hosts.h1.key", "missing"},
		{"hosts: {h1: {agent: \"a:1\", ca: c, cert: c, key: k, command: x}}", "hosts.h1.command", "data, never code"},
		{"hosts: [h1]", "hosts", "expected a mapping"},
		{"swarm: {nodes: [a]}", "swarm.manager", "missing"},
		{"swarm: {manager: \"http://x\", nodes: [a]}", "swarm.manager", "unix:///PATH"},
		{"swarm: {manager: \"unix:///s\", nodes: [a, b, c]}", "swarm.nodes", "one or two"},
		{"swarm: {manager: \"unix:///s\", nodes: [a], ca: x}", "swarm", "go together"},
	} {
		_, err := Parse("s.yaml", []byte(base+c.doc+"\n"), testVocab)
		if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want an error at %s saying %q", c.doc, err, c.path, c.msg)
		}
	}
}
