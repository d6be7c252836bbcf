package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"cnbench/internal/explain"
	"cnbench/internal/model"
)

// Explanation is where an explained case's CPU time went (package
// explain): its cost by stage, and by how much each stage made it
// dearer than its host case.
type Explanation struct {
	Breakdown *explain.Breakdown `json:"breakdown,omitempty"`
	VsHost    *explain.Delta     `json:"vs_host,omitempty"`
	// Path is the time the case's messages took between the stages of
	// their path (request/response); PathVsHostUS how much longer, first
	// stage to last, than its host case's, per direction.
	Path         *explain.PathSummary `json:"path,omitempty"`
	PathVsHostUS map[string]float64   `json:"path_vs_host_us,omitempty"`
	// Note says why the case has no breakdown.
	Note string `json:"note,omitempty"`
	// stacks are the case's folded stacks summed over its samples, for
	// its flame graph.
	stacks []model.FoldedStack
}

// explanationOf is the explanation of a case asked to be explained, or
// nil.
func explanationOf(c model.CaseResult) *Explanation {
	if !c.Params.Explain {
		return nil
	}
	e := &Explanation{Note: c.Outcome.ExplainNote}
	if p, ok := explain.CasePath(c.Samples); ok || len(p.Notes) > 0 {
		e.Path = &p
	}
	if b, ok := explain.CaseBreakdown(c.Samples); ok {
		e.Breakdown = &b
		e.stacks = sumStacks(c.Samples)
	} else if e.Note == "" {
		e.Note = strings.Join(b.Notes, "; ")
		if e.Note == "" {
			e.Note = "no sample of it was profiled"
			if c.Status != model.StatusOK {
				e.Note += fmt.Sprintf(" (the case is %s%s)", c.Status, prefixed(": ", c.Reason))
			}
		}
	}
	return e
}

// sumStacks adds the samples' stacks up.
func sumStacks(samples []model.Sample) []model.FoldedStack {
	byKey := map[[2]string]int{}
	var order [][2]string
	for _, s := range samples {
		if s.Profile == nil {
			continue
		}
		for _, st := range s.Profile.Stacks {
			k := [2]string{st.Frames, st.Stage}
			if _, ok := byKey[k]; !ok {
				order = append(order, k)
			}
			byKey[k] += st.Count
		}
	}
	out := make([]model.FoldedStack, len(order))
	for i, k := range order {
		out[i] = model.FoldedStack{Frames: k[0], Stage: k[1], Count: byKey[k]}
	}
	return out
}

// addExplanationDeltas compares each explained case with its host case.
func addExplanationDeltas(cases []CaseReport) {
	for i := range cases {
		c := &cases[i]
		if c.Explanation == nil || c.Mode == baselineOf(c.Mode) {
			continue
		}
		base := findBaseline(cases, c.Case)
		if base == nil || base.Explanation == nil {
			continue
		}
		e, be := c.Explanation, base.Explanation
		if e.Breakdown != nil && be.Breakdown != nil {
			if d, ok := e.Breakdown.Against(*be.Breakdown); ok {
				e.VsHost = &d
			}
		}
		if e.Path != nil && be.Path != nil {
			e.PathVsHostUS = e.Path.Against(*be.Path)
		}
	}
}

// costUnit is how a cost per unit reads: CPU-s per GB, or CPU-µs per
// transaction, with the factor from seconds.
func costUnit(unit string) (string, float64) {
	if unit == "GB" {
		return "CPU-s/GB", 1
	}
	return "CPU-us/tx", 1e6
}

// Summary is the one line that says what a case costs over host and
// where: "bridge/chc costs +0.120 CPU-s/GB over host: bridge 41%, ...",
// the five stages that moved most, as shares of the difference. A case
// no dearer than host lists what each stage moved instead, shares of a
// difference of zero or less saying nothing.
func (e *Explanation) Summary(c model.Case) string {
	if e == nil || e.VsHost == nil {
		return ""
	}
	name, f := costUnit(e.VsHost.Unit)
	var parts []string
	for _, s := range e.VsHost.Stages {
		if len(parts) == 5 {
			break
		}
		if e.VsHost.TotalS > 0 {
			if s.SharePct >= 1 || s.SharePct <= -1 {
				parts = append(parts, fmt.Sprintf("%s %.0f%%", s.Stage, s.SharePct))
			}
		} else if s.DeltaS != 0 {
			parts = append(parts, fmt.Sprintf("%s %+.3g", s.Stage, s.DeltaS*f))
		}
	}
	verb := "costs"
	if e.VsHost.TotalS <= 0 {
		verb = "costs no more than host:"
	}
	if verb == "costs" {
		return fmt.Sprintf("%s/%s costs %+.3g %s over host: %s", c.Mode, c.Topology, e.VsHost.TotalS*f, name, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("%s/%s %s %+.3g %s; by stage: %s", c.Mode, c.Topology, verb, e.VsHost.TotalS*f, name, strings.Join(parts, ", "))
}

// WriteExplanations prints, for each explained case, its cost by stage
// and against host, the check of the stages against the machine's CPU
// time, and the one-line summary.
func WriteExplanations(w io.Writer, rep *Report, stages []explain.Stage) error {
	explained := false
	for _, c := range rep.Cases {
		e := c.Explanation
		if e == nil {
			continue
		}
		explained = true
		fmt.Fprintf(w, "case %d  %s\n", c.Index, c.Key)
		if e.Breakdown == nil {
			fmt.Fprintf(w, "  no explanation: %s\n\n", e.Note)
			continue
		}
		b := e.Breakdown
		name, f := costUnit(b.Unit)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  stage\t%s\tshare\tvs host\t\n", name)
		delta := map[string]float64{}
		if e.VsHost != nil {
			for _, s := range e.VsHost.Stages {
				delta[s.Stage] = s.DeltaS
			}
		}
		for _, st := range stages {
			v, ok := b.PerUnitS[st.Name]
			d, dok := delta[st.Name]
			if !ok && !dok {
				continue
			}
			fmt.Fprintf(tw, "  %s\t%.4g\t%.1f%%\t%s\t\n", st.Title, v*f, share(v, b.TotalPerUnitS), signed(d*f, e.VsHost != nil))
		}
		total := 0.0
		if e.VsHost != nil {
			total = e.VsHost.TotalS
		}
		fmt.Fprintf(tw, "  total\t%.4g\t\t%s\t\n", b.TotalPerUnitS*f, signed(total*f, e.VsHost != nil))
		fmt.Fprintf(tw, "  profiler (apart)\t%.4g\t\t\t\n", b.ProfilerPerUnitS*f)
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "  %d samples; /proc/stat counted %.3f busy CPU-s, of which the stacks saw %.1f%% and split all of it; other: %.1f%% of busy\n",
			b.Samples, b.MachineBusyS, b.StacksCoverPct, b.OtherPct)
		if b.ElsewherePct >= 0.05 {
			fmt.Fprintf(w, "  other programs on the machine took %.1f%% of the busy time, left out of the stages above\n", b.ElsewherePct)
		}
		if s := e.Summary(c.Case); s != "" {
			fmt.Fprintf(w, "  %s\n", s)
		}
		if err := writePath(w, e); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if !explained {
		_, err := fmt.Fprintln(w, "no case of this run was explained: run it with --explain")
		return err
	}
	return nil
}

func share(v, total float64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * v / total
}

func signed(v float64, known bool) string {
	if !known {
		return "-"
	}
	return fmt.Sprintf("%+.4g", v)
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// writePath prints the time a case's messages took between the stages
// of their path, per direction.
func writePath(w io.Writer, e *Explanation) error {
	p := e.Path
	if p == nil {
		return nil
	}
	if len(p.Directions) == 0 {
		_, err := fmt.Fprintf(w, "  path not timed: %s\n", strings.Join(p.Notes, "; "))
		return err
	}
	fmt.Fprintf(w, "  time between stages of the path (median us over %d samples, and the samples' lowest-highest):\n", p.Samples)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, d := range p.Directions {
		fmt.Fprintf(tw, "  %s, %d messages (%d on other paths)\t\t\n", d.Direction, d.Messages, d.Others)
		for i, g := range d.GapsUS {
			fmt.Fprintf(tw, "    %s > %s\t%.2f\t%s\n", d.Stages[i], d.Stages[i+1], g, rangeOf(d.GapsRangeUS, i))
		}
		vs := ""
		if v, ok := e.PathVsHostUS[d.Direction]; ok {
			vs = fmt.Sprintf(" (%+.2f over host)", v)
		}
		total := ""
		if d.TotalRangeUS != nil {
			total = rangeOf([][2]float64{*d.TotalRangeUS}, 0)
		}
		fmt.Fprintf(tw, "    first to last stage\t%.2f\t%s%s\n", d.TotalUS, total, vs)
		fmt.Fprintf(tw, "    first to last stage, mean\t%.2f\t\n", d.MeanUS)
	}
	return tw.Flush()
}

// rangeOf prints the i-th lowest-highest pair, or nothing.
func rangeOf(r [][2]float64, i int) string {
	if i >= len(r) {
		return ""
	}
	return fmt.Sprintf(" (%.2f-%.2f)", r[i][0], r[i][1])
}
