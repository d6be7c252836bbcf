package explain

import (
	"math"
	"sort"

	"cnbench/internal/model"
)

// Breakdown is a case's CPU cost by stage: the CPU time of every CPU of
// the machine over its profiled samples, per unit of work (GB received,
// or transaction). Idle is left out and the profiler is shown apart.
//
// The stacks say how the busy time splits; how much busy time there was
// is the kernel's count (/proc/stat). The two differ because the
// cpu-clock event's timer cannot fire while a CPU has interrupts off and
// may be delivered late in a VM, and the kernel skips the periods it
// missed: here the stacks stood for 77-105% of the busy time. So the
// stages are scaled to the kernel's busy time, and StacksCoverPct says
// how much of it the stacks saw. Periods lost with interrupts off are
// spread over every stage by that scaling, not given to the code that
// held them off.
type Breakdown struct {
	Unit    string `json:"unit"`    // "GB" or "tx"
	Samples int    `json:"samples"` // profiled samples it sums
	// PerUnitS is CPU seconds per unit by stage; TotalPerUnitS their sum.
	PerUnitS      map[string]float64 `json:"per_unit_s"`
	TotalPerUnitS float64            `json:"total_per_unit_s"`
	// ProfilerPerUnitS is perf's own CPU per unit, in no stage above.
	ProfilerPerUnitS float64 `json:"profiler_per_unit_s"`
	// ElsewherePct is the share of the busy time that programs not of
	// the case took (StageElsewhere), in no stage above.
	ElsewherePct float64 `json:"elsewhere_pct"`
	// SampledBusyS is the busy CPU time the stacks stand for at one
	// period each (every stage but idle, the profiler included);
	// MachineBusyS the machine's busy time over the same windows by
	// /proc/stat, to which the stages are scaled; StacksCoverPct the
	// first in percent of the second. MachineStealS is the time the
	// hypervisor took from the CPUs then, which /proc/stat keeps apart
	// from busy but the profiler's timer runs on through: on a VM the
	// stacks may stand for busy and stolen time together.
	SampledBusyS   float64 `json:"sampled_busy_s"`
	MachineBusyS   float64 `json:"machine_busy_s"`
	MachineStealS  float64 `json:"machine_steal_s"`
	StacksCoverPct float64 `json:"stacks_cover_pct"`
	// OtherPct is the share of the busy time no stage named.
	OtherPct float64 `json:"other_pct"`
	// Notes say why samples have no profile.
	Notes []string `json:"notes,omitempty"`
}

// CaseBreakdown sums a case's profiled samples; ok is false if none has a
// profile with work to divide by.
func CaseBreakdown(samples []model.Sample) (Breakdown, bool) {
	b := Breakdown{PerUnitS: map[string]float64{}}
	stages := map[string]float64{}
	units := 0.0
	seenNote := map[string]bool{}
	for _, s := range samples {
		p := s.Profile
		if p == nil {
			continue
		}
		if p.Note != "" {
			if !seenNote[p.Note] {
				seenNote[p.Note] = true
				b.Notes = append(b.Notes, p.Note)
			}
			continue
		}
		if !(p.Units > 0) || math.IsInf(p.Units, 0) {
			continue
		}
		b.Samples++
		b.Unit = p.Unit
		units += p.Units
		for stage, sec := range p.StagesS {
			stages[stage] += sec
			if stage != StageIdle {
				b.SampledBusyS += sec
			}
		}
		b.MachineBusyS += p.MachineBusyS
		b.MachineStealS += p.MachineStealS
	}
	if b.Samples == 0 {
		return b, false
	}
	scale := 1.0
	if b.MachineBusyS > 0 && b.SampledBusyS > 0 {
		scale = b.MachineBusyS / b.SampledBusyS
		b.StacksCoverPct = 100 * b.SampledBusyS / b.MachineBusyS
	}
	for stage, sec := range stages {
		switch stage {
		case StageIdle, StageElsewhere:
		case StageProfiler:
			b.ProfilerPerUnitS = sec * scale / units
		default:
			b.PerUnitS[stage] = sec * scale / units
			b.TotalPerUnitS += sec * scale / units
		}
	}
	if b.SampledBusyS > 0 {
		b.ElsewherePct = 100 * stages[StageElsewhere] / b.SampledBusyS
	}
	if busy := b.SampledBusyS - stages[StageProfiler] - stages[StageElsewhere]; busy > 0 {
		b.OtherPct = 100 * stages[StageOther] / busy
	}
	return b, true
}

// StageDelta is one stage's share of what a case costs over its baseline.
type StageDelta struct {
	Stage    string  `json:"stage"`
	DeltaS   float64 `json:"delta_s"`   // CPU seconds per unit, case minus baseline
	SharePct float64 `json:"share_pct"` // of the total difference
}

// Delta is a case's cost over its baseline, by stage.
type Delta struct {
	Unit string `json:"unit"`
	// TotalS is the difference of the totals per unit; Stages its parts,
	// the largest first (by size, either sign).
	TotalS float64      `json:"total_s"`
	Stages []StageDelta `json:"stages"`
}

// Against compares a breakdown with its baseline's; ok is false when
// they do not divide by the same unit.
func (b Breakdown) Against(base Breakdown) (Delta, bool) {
	if b.Unit != base.Unit || b.Samples == 0 || base.Samples == 0 {
		return Delta{}, false
	}
	d := Delta{Unit: b.Unit, TotalS: b.TotalPerUnitS - base.TotalPerUnitS}
	names := map[string]bool{}
	for s := range b.PerUnitS {
		names[s] = true
	}
	for s := range base.PerUnitS {
		names[s] = true
	}
	for s := range names {
		sd := StageDelta{Stage: s, DeltaS: b.PerUnitS[s] - base.PerUnitS[s]}
		if d.TotalS != 0 {
			sd.SharePct = 100 * sd.DeltaS / d.TotalS
		}
		d.Stages = append(d.Stages, sd)
	}
	sort.Slice(d.Stages, func(i, j int) bool {
		ai, aj := math.Abs(d.Stages[i].DeltaS), math.Abs(d.Stages[j].DeltaS)
		if ai != aj {
			return ai > aj
		}
		return d.Stages[i].Stage < d.Stages[j].Stage
	})
	return d, true
}
