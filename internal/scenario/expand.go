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
					params.GRO, params.GSO, params.TSO, params.TxChecksum = topo.GRO, topo.GSO, topo.TSO, topo.TxChecksum
					params.DurationMS = s.Duration.Milliseconds()
					params.WarmupMS = s.Warmup.Milliseconds()
					params.Samples = s.Samples
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
// workload's own parameters set.
func (w Workload) variants() []model.Params {
	var out []model.Params
	switch kindOf(w.Type) {
	case kindStream:
		for _, flows := range w.Flows {
			for _, size := range w.MsgSizes {
				out = append(out, w.moreVariants(model.Params{Flows: flows, MsgSize: size})...)
			}
		}
	case kindRR:
		for _, flows := range w.Flows {
			for _, req := range w.RequestSizes {
				for _, resp := range w.ResponseSizes {
					out = append(out, w.moreVariants(model.Params{Flows: flows, RequestSize: req, ResponseSize: resp})...)
				}
			}
		}
	case kindPing:
		for _, size := range w.MsgSizes {
			out = append(out, w.moreVariants(model.Params{MsgSize: size})...)
		}
	default:
		out = append(out, model.Params{})
	}
	return out
}

// caseKey is the identity of a case: everything that makes it a different
// experiment, and nothing that only changes how long it is measured.
// Example: bridge/chhc(mtu=9000)/tcp_stream(flows=4,msg_size=131072)/native
func caseKey(mode string, topo Topology, workload string, params model.Params, engine string) string {
	key := mode + "/" + topologyKey(topo) + "/" + workloadKey(workload, params) + "/" + engine
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
// chc, chhc(nic_rate=10gbit,mtu=1500).
func topologyKey(t Topology) string {
	var opts []string
	if t.NICRate != "" {
		opts = append(opts, "nic_rate="+t.NICRate)
	}
	if t.MTU != 0 {
		opts = append(opts, "mtu="+strconv.Itoa(t.MTU))
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
func workloadKey(workload string, p model.Params) string {
	var opts []string
	switch kindOf(workload) {
	case kindStream:
		opts = []string{"flows=" + strconv.Itoa(p.Flows), "msg_size=" + strconv.Itoa(p.MsgSize)}
	case kindRR:
		opts = []string{"flows=" + strconv.Itoa(p.Flows), "request_size=" + strconv.Itoa(p.RequestSize), "response_size=" + strconv.Itoa(p.ResponseSize)}
	case kindPing:
		opts = []string{"msg_size=" + strconv.Itoa(p.MsgSize)}
	}
	return withOptions(workload, append(opts, moreKey(workload, p)...))
}

func withOptions(name string, opts []string) string {
	if len(opts) == 0 {
		return name
	}
	return name + "(" + strings.Join(opts, ",") + ")"
}
