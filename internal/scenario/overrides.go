package scenario

import (
	"fmt"
	"time"

	"cnbench/internal/model"
	"cnbench/internal/pinning"
	"cnbench/internal/workload"
)

// Overrides are command-line settings that replace the file's; nil leaves
// the file's value.
type Overrides struct {
	Duration, Warmup *time.Duration
	Samples          *int
	// Placements replace the placement axis.
	Placements []string
	// Explain, when set, turns profiling by stage on or off.
	Explain *bool
	// Families cross every topology with each address family given,
	// replacing the topologies' own.
	Families []string
}

// Apply sets the overrides after checking them with the same rules as the
// file. On error the spec is unchanged and each *Error names its flag
// (--duration, --warmup, --samples).
func (s *Spec) Apply(o Overrides) error {
	var errs errorList
	check := func(flag, msg string) {
		if msg != "" {
			errs.add(&Error{Path: flag, Msg: msg})
		}
	}
	duration, warmup, samples := s.Duration, s.Warmup, s.Samples
	if o.Duration != nil {
		duration = o.Duration.Truncate(time.Millisecond)
		check("--duration", checkDuration(duration))
	}
	if o.Warmup != nil {
		warmup = o.Warmup.Truncate(time.Millisecond)
		check("--warmup", checkWarmup(warmup))
	}
	if o.Samples != nil {
		samples = *o.Samples
		check("--samples", checkSamples(samples))
	}
	seen := map[string]bool{}
	for _, pl := range o.Placements {
		if err := pinning.Check(pl); err != nil {
			check("--placement", err.Error())
		} else if seen[pl] {
			check("--placement", fmt.Sprintf("placement %q given twice", pl))
		}
		seen[pl] = true
	}
	var families []string
	for _, f := range o.Families {
		family, err := model.ParseFamily(f)
		if err != nil {
			check("--family", err.Error())
		} else if seen["family "+family] {
			check("--family", fmt.Sprintf("family %q given twice", family))
		}
		seen["family "+family] = true
		families = append(families, model.FamilyKey(family))
	}
	topologies := s.Topologies
	if len(families) > 0 {
		// Entries that differed only in their family become one.
		topologies = nil
		crossed := map[string]bool{}
		for _, t := range s.Topologies {
			for _, f := range families {
				t.Family = f
				if !crossed[topologyKey(t)] {
					crossed[topologyKey(t)] = true
					topologies = append(topologies, t)
				}
			}
		}
		whole := *s
		whole.Topologies = topologies
		if n := whole.countCases(); n > maxCases {
			check("--family", whole.matrixMessage(n))
		}
	}
	if err := errs.err(); err != nil {
		return err
	}
	s.Topologies = topologies
	s.Duration, s.Warmup, s.Samples = duration, warmup, samples
	if len(o.Placements) > 0 {
		s.Placements = o.Placements
	}
	if o.Explain != nil {
		s.Explain = *o.Explain
	}
	return nil
}

// Axes are the matrix given on the command line instead of in a file.
// Flows and MsgSizes apply to every workload that takes them; empty ones
// keep the defaults.
type Axes struct {
	Modes, Topologies, Workloads []string
	Flows                        []int
	// MsgSizes are the write size of stream workloads and both the request
	// and the response size of request/response workloads.
	MsgSizes []int
	// More maps the keys of the other workload parameters ("rate",
	// "pattern", "clients", "mss", ...) to their flags' values, as text a
	// file would hold; each applies to every workload that takes it.
	More map[string][]string
}

// FromAxes builds the spec a file with these axes and default settings
// would give, named "adhoc". Errors name the flag: --modes, --topologies,
// --workloads, --flows, --msg-size.
func FromAxes(a Axes, v Vocabulary) (*Spec, error) {
	var errs errorList
	s := &Spec{
		Name:     "adhoc",
		Duration: defaultDuration,
		Warmup:   defaultWarmup,
		Samples:  defaultSamples,
		Modes:    flagWords(&errs, "--modes", "mode", a.Modes, v.Modes),
		Engines:  []string{defaultEngine},
	}
	topologies := make([]string, len(a.Topologies))
	for i, name := range a.Topologies {
		topologies[i] = v.topologyName(name)
	}
	for _, name := range flagWords(&errs, "--topologies", "topology", topologies, v.Topologies) {
		if msg := v.topologyMessage(name); msg != "" {
			errs.add(&Error{Path: "--topologies", Msg: msg})
			continue
		}
		s.Topologies = append(s.Topologies, Topology{Name: name})
	}
	workloads := flagWords(&errs, "--workloads", "workload", a.Workloads, v.Workloads)
	flows := flagInts(&errs, "--flows", a.Flows, checkFlows)
	sizes := flagInts(&errs, "--msg-size", a.MsgSizes, checkSize)
	if msg := checkWord("engine", defaultEngine, v.Engines); msg != "" {
		errs.add(&Error{Path: "engines", Msg: msg})
	}
	for _, typ := range workloads {
		s.Workloads = append(s.Workloads, workloadsFromAxes(typ, flows, sizes)...)
	}
	applyKnobFlags(&errs, a.More, s.Workloads, sizes)
	if err := errs.err(); err != nil {
		return nil, err
	}
	checkLimits(s, v, func(_ int, key, msg string) { errs.add(&Error{Path: "--" + key, Msg: msg}) })
	if err := errs.err(); err != nil {
		return nil, err
	}
	if n := s.countCases(); n > maxCases {
		return nil, &Error{Msg: s.matrixMessage(n)}
	}
	return s, nil
}

// workloadsFromAxes applies the flag axes to one workload type: flows to
// those that take them, sizes to the message size, or to both request and
// response size. A request/response workload gets one entry per size so
// request and response stay equal rather than being crossed.
func workloadsFromAxes(typ string, flows, sizes []int) []Workload {
	w := defaultWorkload(typ)
	row := workload.Get(typ)
	if row.Takes(workload.KeyFlows) && len(flows) > 0 {
		w.Flows = flows
	}
	switch {
	case len(sizes) == 0:
	case row.Takes(workload.KeyMsgSize):
		w.MsgSizes = sizes
	case row.Takes(workload.KeyRequestSize):
		out := make([]Workload, 0, len(sizes))
		for _, size := range sizes {
			sized := w
			sized.RequestSizes = []int{size}
			sized.ResponseSizes = []int{size}
			out = append(out, sized)
		}
		return out
	}
	return []Workload{w}
}

// flagWords checks a comma-list flag of names: known, distinct, not empty.
func flagWords(errs *errorList, flag, kind string, names, valid []string) []string {
	if len(names) == 0 {
		errs.add(&Error{Path: flag, Msg: fmt.Sprintf("empty; list at least one %s (valid %s: %s)", kind, plural(kind), quoteList(valid))})
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, name := range names {
		if msg := checkWord(kind, name, valid); msg != "" {
			errs.add(&Error{Path: flag, Msg: msg})
			continue
		}
		if seen[name] {
			errs.add(&Error{Path: flag, Msg: fmt.Sprintf("%s %q given twice", kind, name)})
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	return out
}

// flagInts checks a comma-list flag of numbers: each valid, all distinct.
func flagInts(errs *errorList, flag string, values []int, check func(int) string) []int {
	var out []int
	seen := map[int]bool{}
	for _, v := range values {
		if msg := check(v); msg != "" {
			errs.add(&Error{Path: flag, Msg: msg})
			continue
		}
		if seen[v] {
			errs.add(&Error{Path: flag, Msg: fmt.Sprintf("value %d given twice", v)})
			continue
		}
		seen[v] = true
		out = append(out, v)
	}
	return out
}
