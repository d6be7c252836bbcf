package scenario

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Host maps one host of the topologies (h1, h2) to a cnbench agent on a
// real machine; a topology that spans hosts then places each mapped host
// on its agent's machine.
type Host struct {
	Name string
	// Agent is the agent's "host:port"; the agent's certificate must name
	// the host part.
	Agent string
	// CA, Cert and Key are the controller's credentials: the CA that
	// signed the agent's certificate, and the controller's certificate
	// and key. They are only read, never written.
	CA, Cert, Key string
}

var (
	hostKeys     = []string{"agent", "ca", "cert", "key"}
	hostNameRule = regexp.MustCompile(`^h[1-9][0-9]?$`)
)

// hosts reads the hosts section: a mapping of host names to agents.
// Relative credential paths are taken from the scenario file's directory
// and stored absolute, so a resumed run finds them from anywhere.
func (p *parser) hosts(fd field) []Host {
	if fd.value.Kind != yaml.MappingNode {
		p.report(fd.value, fd.path, "expected a mapping of host names (h1, h2) to agents, got "+describe(fd.value))
		return nil
	}
	var out []Host
	for i := 0; i+1 < len(fd.value.Content); i += 2 {
		k, v := resolve(fd.value.Content[i]), resolve(fd.value.Content[i+1])
		path := joinPath(fd.path, k.Value)
		if k.Kind != yaml.ScalarNode || !hostNameRule.MatchString(k.Value) {
			p.report(k, path, fmt.Sprintf("host name %q: expected h1, h2, ... as the topologies name their hosts", k.Value))
			continue
		}
		for _, h := range out {
			if h.Name == k.Value {
				p.report(k, path, "host given twice")
			}
		}
		if v.Kind != yaml.MappingNode {
			p.report(v, path, "expected a mapping with the keys "+quoteList(hostKeys)+", got "+describe(v))
			continue
		}
		f := p.fields(v, path, hostKeys)
		h := Host{Name: k.Value}
		for _, key := range hostKeys {
			hf, ok := f[key]
			if !ok || isNull(hf.value) {
				p.report(v, joinPath(path, key), "missing")
				continue
			}
			text, ok := p.scalar(item{hf.value, hf.path}, "a text")
			if !ok {
				continue
			}
			switch key {
			case "agent":
				p.check(hf.value, hf.path, checkAgentAddr(text))
				h.Agent = text
			case "ca":
				h.CA = p.credentialPath(text)
			case "cert":
				h.Cert = p.credentialPath(text)
			case "key":
				h.Key = p.credentialPath(text)
			}
		}
		if h.CA != "" && h.Cert != "" && h.Key != "" {
			p.checkCredentials(f, h.CA, h.Cert, h.Key)
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (p *parser) credentialPath(path string) string {
	if filepath.IsAbs(path) || p.file == "" {
		return path
	}
	abs, err := filepath.Abs(filepath.Join(filepath.Dir(p.file), path))
	if err != nil {
		return path
	}
	return abs
}

func checkAgentAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return fmt.Sprintf("agent %q: expected HOST:PORT, such as 10.0.0.11:7443", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("agent %q: port %q out of range 1..65535", addr, port)
	}
	return ""
}

// hostsNode renders the hosts section for YAML.
func hostsNode(hosts []Host) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, h := range hosts {
		e := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		for _, kv := range [][2]string{{"agent", h.Agent}, {"ca", h.CA}, {"cert", h.Cert}, {"key", h.Key}} {
			e.Content = append(e.Content, scalarNode(kv[0]), scalarNode(kv[1]))
		}
		m.Content = append(m.Content, scalarNode(h.Name), e)
	}
	return m
}
