package explain

import (
	"sort"
	"strings"

	"cnbench/internal/model"
)

// maxFrames bounds a folded stack: the innermost frames are kept, which
// are the ones attribution and a flame graph's tips need.
const maxFrames = 48

// maxStacks bounds the distinct stacks a profile keeps; the lightest
// beyond it are summed into one entry per stage, so totals still add.
const maxStacks = 2000

// Attribute names the stage of one stack. A process whose stage takes
// all its time (the profiler, ovs-vswitchd) has every sample; a program
// the table does not know (a user process, not a kernel thread) has its
// samples in "elsewhere", but for softirq work the kernel did while it
// ran, which may be the case's packets; a sample in user space belongs
// to its process's stage (the engines); a sample in the kernel to the
// innermost frame that names a stage; anything else to "other".
// process is the name of the stack's process (its thread group's
// leader), which may differ from its thread's; "" if unknown.
func (t *Table) Attribute(s Stack, process string) string {
	return t.attribute(s, process, nil)
}

func (t *Table) attribute(s Stack, process string, cache map[string]string) string {
	byProcess, whole := t.process(s.Comm, process)
	if whole {
		return byProcess
	}
	if len(s.Frames) == 0 {
		return StageOther
	}
	if byProcess == "" && inUserProcess(s) && !t.inSoftirq(s, cache) {
		return StageElsewhere
	}
	if !s.Frames[0].Kernel {
		if byProcess != "" {
			return byProcess
		}
		return StageOther
	}
	for _, f := range s.Frames {
		if !f.Kernel {
			break
		}
		if stage := t.symbolCached(f.Symbol, cache); stage != "" {
			return stage
		}
	}
	return StageOther
}

// inUserProcess reports whether a stack has user-space frames, which a
// kernel thread's never has.
func inUserProcess(s Stack) bool {
	for _, f := range s.Frames {
		if !f.Kernel {
			return true
		}
	}
	return false
}

// inSoftirq reports whether a stack's kernel frames pass through softirq
// or NAPI work.
func (t *Table) inSoftirq(s Stack, cache map[string]string) bool {
	for _, f := range s.Frames {
		if !f.Kernel {
			return false
		}
		if t.symbolCached(f.Symbol, cache) == StageSoftirq {
			return true
		}
	}
	return false
}

func (t *Table) symbolCached(sym string, cache map[string]string) string {
	stage, ok := cache[sym]
	if !ok {
		stage = t.Symbol(sym)
		if cache != nil {
			cache[sym] = stage
		}
	}
	return stage
}

// Builder sums stacks into a profile.
type Builder struct {
	table   *Table
	process func(pid int) string
	cache   map[string]string
	periods map[string]int64 // ns by stage
	stacks  map[[2]string]int
	period  int64
}

// NewBuilder starts a profile; process names a PID's process (nil: by
// the stack's thread name alone).
func NewBuilder(t *Table, process func(pid int) string) *Builder {
	if process == nil {
		process = func(int) string { return "" }
	}
	return &Builder{table: t, process: process, cache: map[string]string{},
		periods: map[string]int64{}, stacks: map[[2]string]int{}}
}

// Add attributes one stack.
func (b *Builder) Add(s Stack) {
	stage := b.table.attribute(s, b.process(s.PID), b.cache)
	b.periods[stage] += s.PeriodNS
	if s.PeriodNS > 0 {
		b.period = s.PeriodNS
	}
	b.stacks[[2]string{fold(s), stage}]++
}

// Profile is what was added: CPU seconds by stage and the folded stacks.
func (b *Builder) Profile() model.Profile {
	p := model.Profile{PeriodNS: b.period, StagesS: map[string]float64{}}
	for stage, ns := range b.periods {
		p.StagesS[stage] = float64(ns) / 1e9
	}
	for k, n := range b.stacks {
		p.Stacks = append(p.Stacks, model.FoldedStack{Frames: k[0], Stage: k[1], Count: n})
	}
	p.Stacks = keepHeaviest(p.Stacks, maxStacks)
	return p
}

// fold writes a stack root first, its thread's name as the root:
// "iperf3;entry_SYSCALL_64;...;tcp_sendmsg".
func fold(s Stack) string {
	frames := s.Frames
	if len(frames) > maxFrames {
		frames = frames[:maxFrames]
	}
	parts := make([]string, 0, len(frames)+1)
	parts = append(parts, strings.ReplaceAll(s.Comm, ";", ":"))
	for i := len(frames) - 1; i >= 0; i-- {
		parts = append(parts, strings.ReplaceAll(bareSymbol(frames[i].Symbol), ";", ":"))
	}
	return strings.Join(parts, ";")
}

// keepHeaviest keeps the n most frequent stacks (then by name, so the
// result does not depend on map order) and sums the rest by stage.
func keepHeaviest(stacks []model.FoldedStack, n int) []model.FoldedStack {
	sort.Slice(stacks, func(i, j int) bool {
		if stacks[i].Count != stacks[j].Count {
			return stacks[i].Count > stacks[j].Count
		}
		return stacks[i].Frames < stacks[j].Frames
	})
	if len(stacks) <= n {
		return stacks
	}
	rest := map[string]int{}
	for _, s := range stacks[n:] {
		rest[s.Stage] += s.Count
	}
	kept := stacks[:n:n]
	var stages []string
	for stage := range rest {
		stages = append(stages, stage)
	}
	sort.Strings(stages)
	for _, stage := range stages {
		kept = append(kept, model.FoldedStack{Frames: "[lighter stacks];" + stage, Stage: stage, Count: rest[stage]})
	}
	return kept
}
