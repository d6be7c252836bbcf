package scenario

import (
	"bytes"
	"cnbench/internal/units"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// YAML renders the spec with every default filled in, in a form Parse
// accepts again. A run stores it so the exact matrix can be read back
// later, whatever the defaults have become by then.
func (s *Spec) YAML() ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	put := func(m *yaml.Node, key string, value *yaml.Node) {
		m.Content = append(m.Content, scalarNode(key), value)
	}
	put(doc, "name", scalarNode(s.Name))
	if s.Description != "" {
		put(doc, "description", scalarNode(s.Description))
	}
	put(doc, "duration", scalarNode(s.Duration.String()))
	put(doc, "warmup", scalarNode(s.Warmup.String()))
	put(doc, "samples", scalarNode(s.Samples))
	if s.Explain {
		put(doc, "explain", scalarNode(true))
	}
	put(doc, "modes", listNode(s.Modes, scalarNode))

	topologies := &yaml.Node{Kind: yaml.SequenceNode}
	for _, t := range s.Topologies {
		if topologyKey(t) == t.Name {
			topologies.Content = append(topologies.Content, scalarNode(t.Name))
			continue
		}
		m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		put(m, "name", scalarNode(t.Name))
		if t.NICRate != "" {
			put(m, "nic_rate", scalarNode(t.NICRate))
		}
		if t.MTU != 0 {
			put(m, "mtu", scalarNode(t.MTU))
		}
		if t.Family != "" {
			put(m, "family", scalarNode(t.Family))
		}
		for _, tg := range t.toggles() {
			if *tg.value != "" {
				put(m, tg.key, scalarNode(*tg.value))
			}
		}
		topologies.Content = append(topologies.Content, m)
	}
	put(doc, "topologies", topologies)

	workloads := &yaml.Node{Kind: yaml.SequenceNode}
	for _, w := range s.Workloads {
		m := &yaml.Node{Kind: yaml.MappingNode}
		put(m, "type", scalarNode(w.Type))
		for _, a := range axesOf(w.Type) {
			put(m, a.key, listNode(*a.values(&w), a.node))
		}
		w.putKnobs(func(key string, value *yaml.Node) { put(m, key, value) })
		workloads.Content = append(workloads.Content, m)
	}
	put(doc, "workloads", workloads)
	put(doc, "engines", listNode(s.Engines, scalarNode))
	// No pinning is the only default that can never change, and leaving it
	// out keeps the documents of runs from before placements as they were.
	if pl := s.placements(); len(pl) != 1 || pl[0] != defaultPlacement {
		put(doc, "placement", listNode(pl, scalarNode))
	}
	s.putWhere(func(key string, value *yaml.Node) { put(doc, key, value) })

	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode scenario %q: %w", s.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode scenario %q: %w", s.Name, err)
	}
	return buf.Bytes(), nil
}

// scalarNode lets the YAML library pick the tag and quoting, so a string
// such as "yes" or "10" stays a string when read back.
func scalarNode[T any](v T) *yaml.Node {
	n := &yaml.Node{}
	if err := n.Encode(v); err != nil {
		panic(fmt.Sprintf("encode scalar %v: %v", v, err)) // only strings and ints get here
	}
	return n
}

// sizeNode writes 128K for 131072 but a plain 64 as a number.
func sizeNode(n int) *yaml.Node {
	if text := units.FormatSize(n); strings.Trim(text, "0123456789") != "" {
		return scalarNode(text)
	}
	return scalarNode(n)
}

// listNode writes short lists inline: [1, 4].
func listNode[T any](values []T, node func(T) *yaml.Node) *yaml.Node {
	l := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, v := range values {
		l.Content = append(l.Content, node(v))
	}
	return l
}

// putWhere puts the sections that say where endpoints go: the hosts and
// the clusters.
func (s *Spec) putWhere(put func(key string, value *yaml.Node)) {
	if len(s.Hosts) > 0 {
		put("hosts", hostsNode(s.Hosts))
	}
	if s.Swarm != nil {
		put("swarm", swarmNode(s.Swarm))
	}
	if s.Kubernetes != nil {
		put("kubernetes", kubernetesNode(s.Kubernetes))
	}
}
