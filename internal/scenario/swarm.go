package scenario

import (
	"cnbench/internal/cluster"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Swarm says where the Docker Swarm of the swarm:* modes is: a manager's
// Engine API and the nodes to place endpoints on. The scenario's section
// is the cluster's own configuration, read as a file says it.
type Swarm = cluster.Swarm

var swarmKeys = []string{"manager", "nodes", "image", "ca", "cert", "key", "control_port"}

// swarm reads the swarm section.
func (p *parser) swarm(fd field) *Swarm {
	if fd.value.Kind != yaml.MappingNode {
		p.report(fd.value, fd.path, "expected a mapping with the keys "+quoteList(swarmKeys)+", got "+describe(fd.value))
		return nil
	}
	f := p.fields(fd.value, fd.path, swarmKeys)
	s := &Swarm{}
	text := func(key string) string { return p.text(f, key) }
	s.Manager = text("manager")
	switch {
	case s.Manager == "":
		p.report(fd.value, joinPath(fd.path, "manager"), "missing; the manager's Engine API, unix:///PATH or tcp://HOST:PORT")
	case !strings.HasPrefix(s.Manager, "unix:///") && !strings.HasPrefix(s.Manager, "tcp://"):
		p.report(f["manager"].value, f["manager"].path, fmt.Sprintf("manager %q: expected unix:///PATH or tcp://HOST:PORT", s.Manager))
	}
	s.CA, s.Cert, s.Key = text("ca"), text("cert"), text("key")
	if s.CA != "" || s.Cert != "" || s.Key != "" {
		if s.CA == "" || s.Cert == "" || s.Key == "" {
			p.report(fd.value, fd.path, "ca, cert and key go together")
		}
		s.CA, s.Cert, s.Key = p.credentialPath(s.CA), p.credentialPath(s.Cert), p.credentialPath(s.Key)
		if s.CA != "" && s.Cert != "" && s.Key != "" {
			p.checkCredentials(f, s.CA, s.Cert, s.Key)
		}
	}
	s.Image = text("image")
	s.ControlPort = p.controlPort(f, 65000)
	nf, ok := f["nodes"]
	if !ok || isNull(nf.value) {
		p.report(fd.value, joinPath(fd.path, "nodes"), "missing; one node (within one node only) or two")
		return s
	}
	for _, it := range p.items(nf.value, nf.path) {
		if v, ok := p.scalar(it, "a node's host name or ID"); ok {
			s.Nodes = append(s.Nodes, v)
		}
	}
	if len(s.Nodes) < 1 || len(s.Nodes) > 2 {
		p.report(nf.value, nf.path, fmt.Sprintf("%d nodes; give one or two", len(s.Nodes)))
	}
	return s
}

// swarmNode renders the swarm section for YAML.
func swarmNode(s *Swarm) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	put := func(k string, v *yaml.Node) { m.Content = append(m.Content, scalarNode(k), v) }
	put("manager", scalarNode(s.Manager))
	put("nodes", listNode(s.Nodes, scalarNode))
	for _, kv := range [][2]string{{"image", s.Image}, {"ca", s.CA}, {"cert", s.Cert}, {"key", s.Key}} {
		if kv[1] != "" {
			put(kv[0], scalarNode(kv[1]))
		}
	}
	if s.ControlPort != 0 {
		put("control_port", scalarNode(s.ControlPort))
	}
	return m
}
