package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"cnbench/internal/cluster"
	"cnbench/internal/inputfile"
)

// Kubernetes says where the cluster of the k8s:* modes is and where on
// it to place pods; `run --kubeconfig` gives one too.
type Kubernetes = cluster.Kubernetes

var kubernetesKeys = []string{"kubeconfig", "context", "namespace", "image", "nodes", "node_selector", "tolerations", "control_port"}

var tolerationKeys = []string{"key", "operator", "value", "effect"}

// kubernetes reads the kubernetes section.
func (p *parser) kubernetes(fd field) *Kubernetes {
	if fd.value.Kind != yaml.MappingNode {
		p.report(fd.value, fd.path, "expected a mapping with the keys "+quoteList(kubernetesKeys)+", got "+describe(fd.value))
		return nil
	}
	f := p.fields(fd.value, fd.path, kubernetesKeys)
	k := &Kubernetes{}
	text := func(key string) string { return p.text(f, key) }
	if k.Kubeconfig = text("kubeconfig"); k.Kubeconfig != "" {
		k.Kubeconfig = p.credentialPath(homePath(k.Kubeconfig))
		if _, err := inputfile.Read(k.Kubeconfig, maxKubeconfig); err != nil {
			p.report(f["kubeconfig"].value, f["kubeconfig"].path, err.Error())
		}
	}
	k.Context, k.Namespace, k.Image = text("context"), text("namespace"), text("image")
	k.ControlPort = p.controlPort(f, 65535-2*cluster.SideBySide)
	if nf, ok := f["nodes"]; ok {
		for _, it := range p.items(nf.value, nf.path) {
			if v, ok := p.scalar(it, "a node's name"); ok {
				k.Nodes = append(k.Nodes, v)
			}
		}
		if len(k.Nodes) > 2 {
			p.report(nf.value, nf.path, fmt.Sprintf("%d nodes; give one or two", len(k.Nodes)))
		}
	}
	if sf, ok := f["node_selector"]; ok {
		k.NodeSelector = p.labels(sf)
	}
	if tf, ok := f["tolerations"]; ok {
		for _, it := range p.items(tf.value, tf.path) {
			if t, ok := p.toleration(it); ok {
				k.Tolerations = append(k.Tolerations, t)
			}
		}
	}
	return k
}

// maxKubeconfig bounds a kubeconfig file: one with a few hundred
// clusters' certificates is a few MiB.
const maxKubeconfig = 16 << 20

// homePath expands a leading ~/ to the home directory, as kubectl's
// users write their kubeconfig paths.
func homePath(path string) string {
	rest, ok := strings.CutPrefix(path, "~/")
	if !ok {
		return path
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return path
	}
	return filepath.Join(home, rest)
}

// text is a key's scalar text, "" where absent.
func (p *parser) text(f map[string]field, key string) string {
	hf, ok := f[key]
	if !ok || isNull(hf.value) {
		return ""
	}
	v, _ := p.scalar(item{hf.value, hf.path}, "a text")
	return v
}

// controlPort reads a cluster section's control_port, 0 where absent,
// reporting one outside 1..highest.
func (p *parser) controlPort(f map[string]field, highest int) int {
	port := p.text(f, "control_port")
	if port == "" {
		return 0
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > highest {
		p.report(f["control_port"].value, f["control_port"].path, fmt.Sprintf("control_port %q out of range 1..%d", port, highest))
	}
	return n
}

// labels reads a mapping of label keys to values.
func (p *parser) labels(fd field) map[string]string {
	if fd.value.Kind != yaml.MappingNode {
		p.report(fd.value, fd.path, "expected a mapping of label keys to values, such as {kubernetes.io/os: linux}, got "+describe(fd.value))
		return nil
	}
	out := map[string]string{}
	for i := 0; i+1 < len(fd.value.Content); i += 2 {
		key, kok := p.scalar(item{resolve(fd.value.Content[i]), fd.path}, "a label key")
		val, vok := p.scalar(item{resolve(fd.value.Content[i+1]), joinPath(fd.path, key)}, "a label value")
		if kok && vok {
			out[key] = val
		}
	}
	return out
}

// toleration reads one toleration, as a pod spec writes it.
func (p *parser) toleration(it item) (cluster.Toleration, bool) {
	if it.node == nil || it.node.Kind != yaml.MappingNode {
		p.report(it.node, it.path, "expected a toleration {key, operator, value, effect}, got "+describe(it.node))
		return cluster.Toleration{}, false
	}
	f := p.fields(it.node, it.path, tolerationKeys)
	t := cluster.Toleration{Key: p.text(f, "key"), Operator: p.text(f, "operator"), Value: p.text(f, "value"), Effect: p.text(f, "effect")}
	ok := true
	if t.Operator != "" && t.Operator != "Equal" && t.Operator != "Exists" {
		p.report(f["operator"].value, f["operator"].path, fmt.Sprintf("operator %q: expected Equal or Exists", t.Operator))
		ok = false
	}
	if t.Effect != "" && !slices.Contains([]string{"NoSchedule", "PreferNoSchedule", "NoExecute"}, t.Effect) {
		p.report(f["effect"].value, f["effect"].path, fmt.Sprintf("effect %q: expected NoSchedule, PreferNoSchedule or NoExecute", t.Effect))
		ok = false
	}
	return t, ok
}

// kubernetesNode renders the kubernetes section for YAML.
func kubernetesNode(k *Kubernetes) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	put := func(key string, v *yaml.Node) { m.Content = append(m.Content, scalarNode(key), v) }
	for _, kv := range [][2]string{{"kubeconfig", k.Kubeconfig}, {"context", k.Context}, {"namespace", k.Namespace}, {"image", k.Image}} {
		if kv[1] != "" {
			put(kv[0], scalarNode(kv[1]))
		}
	}
	if len(k.Nodes) > 0 {
		put("nodes", listNode(k.Nodes, scalarNode))
	}
	if len(k.NodeSelector) > 0 {
		sel := &yaml.Node{Kind: yaml.MappingNode}
		keys := make([]string, 0, len(k.NodeSelector))
		for key := range k.NodeSelector {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		for _, key := range keys {
			sel.Content = append(sel.Content, scalarNode(key), scalarNode(k.NodeSelector[key]))
		}
		put("node_selector", sel)
	}
	if len(k.Tolerations) > 0 {
		put("tolerations", listNode(k.Tolerations, func(t cluster.Toleration) *yaml.Node {
			tn := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
			for i, v := range []string{t.Key, t.Operator, t.Value, t.Effect} {
				if v != "" {
					tn.Content = append(tn.Content, scalarNode(tolerationKeys[i]), scalarNode(v))
				}
			}
			return tn
		}))
	}
	if k.ControlPort != 0 {
		put("control_port", scalarNode(k.ControlPort))
	}
	return m
}
