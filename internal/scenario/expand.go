package scenario

import (
	"strconv"
	"strings"

	"cnbench/internal/model"
)

// Expand returns the matrix of cases, all pending, in a fixed order: modes
// (outermost), topologies, workloads, each workload's parameter axes in the
// order they appear in the file (flows, then sizes), and engines
// (innermost). The order and the keys depend only on the spec, so a run can
// be resumed or compared case by case.
func (s *Spec) Expand() []model.Case {
	cases := make([]model.Case, 0, min(s.countCases(), maxCases))
	for _, mode := range s.Modes {
		for _, topo := range s.Topologies {
			for _, w := range s.Workloads {
				for _, params := range w.variants() {
					params.NICRate = topo.NICRate
					params.MTU = topo.MTU
					params.Family = topo.Family
					params.GRO, params.GSO, params.TSO, params.TxChecksum = topo.GRO, topo.GSO, topo.TSO, topo.TxChecksum
					params.DurationMS = s.Duration.Milliseconds()
					params.WarmupMS = s.Warmup.Milliseconds()
					params.Samples = s.Samples
					params.Explain = s.Explain
					for _, pl := range s.placements() {
						params.Placement = ""
						if pl != defaultPlacement {
							params.Placement = pl
						}
						for _, engine := range s.Engines {
							cases = append(cases, model.Case{
								Index:    len(cases),
								Key:      caseKey(mode, topo, w.Type, params, engine),
								Mode:     mode,
								Topology: topo.Name,
								Workload: w.Type,
								Engine:   engine,
								Params:   params,
								Status:   model.StatusPending,
							})
						}
					}
				}
			}
		}
	}
	return cases
}

// variants are the workload's parameter combinations, with only the
// workload's own parameters set: its row's axes in their order (the first
// outermost), each point crossed with the knob variants.
func (w Workload) variants() []model.Params {
	points := []model.Params{{}}
	for _, a := range axesOf(w.Type) {
		var next []model.Params
		for _, p := range points {
			for _, v := range *a.values(&w) {
				*a.param(&p) = v
				next = append(next, p)
			}
		}
		points = next
	}
	var out []model.Params
	for _, p := range points {
		out = append(out, w.knobVariants(p)...)
	}
	return out
}

// caseKey is the identity of a case: everything that makes it a different
// experiment, and nothing that only changes how long it is measured.
// Example: bridge/chhc(mtu=9000)/tcp_stream(flows=4,msg_size=131072)/native
func caseKey(mode string, topo Topology, typ string, params model.Params, engine string) string {
	key := mode + "/" + topologyKey(topo) + "/" + workloadKey(typ, params) + "/" + engine
	if params.Placement != "" {
		key += "/placement=" + params.Placement
	}
	return key
}

// placements is the placement axis; a spec built in code may leave it
// empty, which means no pinning.
func (s *Spec) placements() []string {
	if len(s.Placements) == 0 {
		return []string{defaultPlacement}
	}
	return s.Placements
}

// topologyKey is the topology name with the options that are set:
// chc, chhc(nic_rate=10gbit,mtu=1500), chc(family=ipv6).
func topologyKey(t Topology) string {
	var opts []string
	if t.NICRate != "" {
		opts = append(opts, "nic_rate="+t.NICRate)
	}
	if t.MTU != 0 {
		opts = append(opts, "mtu="+strconv.Itoa(t.MTU))
	}
	if t.Family != "" {
		opts = append(opts, "family="+t.Family)
	}
	for _, tg := range t.toggles() {
		if *tg.value != "" {
			opts = append(opts, tg.key+"="+*tg.value)
		}
	}
	return withOptions(t.Name, opts)
}

// workloadKey is the workload name with its parameters in bytes:
// tcp_rr(flows=1,request_size=64,response_size=64).
func workloadKey(typ string, p model.Params) string {
	var opts []string
	for _, a := range axesOf(typ) {
		opts = append(opts, a.key+"="+strconv.Itoa(*a.param(&p)))
	}
	return withOptions(typ, append(opts, knobKey(typ, p)...))
}

func withOptions(name string, opts []string) string {
	if len(opts) == 0 {
		return name
	}
	return name + "(" + strings.Join(opts, ",") + ")"
}
