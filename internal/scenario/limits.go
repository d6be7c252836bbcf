package scenario

import (
	"fmt"

	"cnbench/internal/model"
	"cnbench/internal/workload"
)

// limitMessage checks one variant of a workload against what a run can
// build: endpoints on one host, as many as each mode numbers there, and
// sockets in one engine. It returns the key to blame ("clients" or
// "flows") and the message, or "" when the variant fits every mode in
// every topology given; the run applies the same bounds, so a case that
// passes here is not refused for its size once its network is built.
func limitMessage(typ string, p model.Params, modes []string, topologies []Topology, v Vocabulary) (key, msg string) {
	servers, clients := p.Endpoints()
	for _, t := range topologies {
		n := servers + clients
		if v.BusiestHost != nil {
			n = v.BusiestHost(t.Name, p)
		}
		for _, m := range modes {
			limit := model.BaseEndpointsPerHost
			if v.EndpointsPerHost != nil {
				limit = v.EndpointsPerHost(m, t.Name)
			}
			if n > limit {
				return "clients", fmt.Sprintf("%s with %s and %s puts %d endpoints on one host in topology %s; mode %s holds at most %d there",
					patternName(p), count(clients, "client"), count(servers, "server"), n, t.Name, m, limit)
			}
		}
	}
	row := workload.Get(typ)
	flows := p.Flows
	if flows == 0 {
		flows = row.Defaults.Flows
	}
	perClient, perServer := row.SocketsPerFlow()
	clientsPerServer := (clients + servers - 1) / servers
	if n := flows * perClient; n > workload.MaxEngineSockets {
		return "flows", fmt.Sprintf("%d flows of %s hold %d sockets in the client's engine; an engine holds at most %d",
			flows, typ, n, workload.MaxEngineSockets)
	}
	if n := flows * clientsPerServer * perServer; n > workload.MaxEngineSockets {
		return "flows", fmt.Sprintf("%d flows from each of %d clients hold %d sockets in their server's engine; an engine holds at most %d",
			flows, clientsPerServer, n, workload.MaxEngineSockets)
	}
	return "", ""
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func patternName(p model.Params) string {
	if p.Pattern == "" {
		return "pattern " + model.PatternPairs
	}
	return "pattern " + p.Pattern
}

// checkLimits reports each workload's first variant that does not fit,
// at the path where returns for workload i.
func checkLimits(s *Spec, v Vocabulary, report func(i int, key, msg string)) {
	for i, w := range s.Workloads {
		for _, params := range w.variants() {
			if key, msg := limitMessage(w.Type, params, s.Modes, s.Topologies, v); msg != "" {
				report(i, key, msg)
				break
			}
		}
	}
}
