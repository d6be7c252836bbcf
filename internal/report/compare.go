package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"cnbench/internal/model"
	"cnbench/internal/stats"
)

// Verdict is the outcome of comparing one metric of one case.
type Verdict string

const (
	Better        Verdict = "better"
	Worse         Verdict = "worse"
	NoSignificant Verdict = "no significant change"
)

// CompareMetrics are the metrics compared unless asked otherwise: what a
// user tunes for. Byte counts follow from the duration and CPU shares
// from the rate, so they would only repeat the verdicts.
var CompareMetrics = []string{
	model.ThroughputBPS, model.TransactionsPerS,
	model.LatencyP50US, model.LatencyP99US, model.LatencyP999US,
	model.CPUSPerGB, model.CPUUSPerTx,
}

// Comparison holds the differences between two runs, case by case.
type Comparison struct {
	A, B  model.Run
	Alpha float64
	Rows  []ComparisonRow
	// OnlyA and OnlyB name case keys that one run lacks; Unmeasured
	// names cases without metrics in one run, with the reason.
	OnlyA, OnlyB []string
	Unmeasured   []string
	Warnings     []string
}

// ComparisonRow compares one metric of one case.
type ComparisonRow struct {
	Key, Metric string
	A, B        stats.Summary
	// ChangePct is B against A in percent of A, whatever the direction.
	ChangePct float64
	// P is the two-sided p-value of Welch's t-test on the per-sample
	// values; NaN when a side has fewer than two samples.
	P       float64
	Verdict Verdict
}

// WorsePct is how much worse B is than A, in percent of A: the change
// oriented by the metric's direction, negative when B is better.
func (r ComparisonRow) WorsePct() float64 {
	if model.Metrics[r.Metric].HigherIsBetter {
		return -r.ChangePct
	}
	return r.ChangePct
}

// Compare matches the cases of a and b by key and compares each metric in
// metrics (CompareMetrics when empty) that both measured. The change is
// between the values `report` shows (latency from merged histograms); its
// significance is Welch's t-test on the per-sample values, at level alpha.
func Compare(a, b *model.RunResult, metrics []string, alpha float64) *Comparison {
	if len(metrics) == 0 {
		metrics = CompareMetrics
	}
	cmp := &Comparison{A: a.Run, B: b.Run, Alpha: alpha}
	byKey := map[string]model.CaseResult{}
	for _, c := range b.Cases {
		byKey[c.Key] = c
	}
	seen := map[string]bool{}
	for _, ca := range a.Cases {
		seen[ca.Key] = true
		cb, ok := byKey[ca.Key]
		if !ok {
			cmp.OnlyA = append(cmp.OnlyA, ca.Key)
			continue
		}
		sa, seriesA := measuredCase(ca, &cmp.Warnings)
		sb, seriesB := measuredCase(cb, &cmp.Warnings)
		switch {
		case sa == nil:
			cmp.Unmeasured = append(cmp.Unmeasured, fmt.Sprintf("%s: %s in run %d", ca.Key, describeStatus(ca), a.Run.ID))
			continue
		case sb == nil:
			cmp.Unmeasured = append(cmp.Unmeasured, fmt.Sprintf("%s: %s in run %d", cb.Key, describeStatus(cb), b.Run.ID))
			continue
		}
		for _, m := range metrics {
			ma, okA := sa[m]
			mb, okB := sb[m]
			if !okA || !okB {
				continue
			}
			row := ComparisonRow{Key: ca.Key, Metric: m, A: ma, B: mb, P: stats.WelchTest(seriesA[m], seriesB[m]).P}
			row.ChangePct = (mb.Mean - ma.Mean) / math.Abs(ma.Mean) * 100
			if ma.Mean == 0 {
				row.ChangePct = math.NaN()
			}
			row.Verdict = verdict(row, alpha)
			cmp.Rows = append(cmp.Rows, row)
		}
	}
	for _, c := range b.Cases {
		if !seen[c.Key] {
			cmp.OnlyB = append(cmp.OnlyB, c.Key)
		}
	}
	return cmp
}

func measuredCase(c model.CaseResult, warnings *[]string) (map[string]stats.Summary, map[string][]float64) {
	if c.Status == model.StatusSkipped || c.Status == model.StatusFailed {
		return nil, nil
	}
	metrics, series, _ := summarizeCase(c, warnings)
	for name, xs := range series {
		series[name] = present(xs)
	}
	return metrics, series
}

func describeStatus(c model.CaseResult) string {
	if c.Reason != "" {
		return string(c.Status) + " (" + c.Reason + ")"
	}
	if c.Status == model.StatusOK {
		return "no samples"
	}
	return string(c.Status)
}

func verdict(r ComparisonRow, alpha float64) Verdict {
	if _, known := model.Metrics[r.Metric]; !known || math.IsNaN(r.P) || r.P >= alpha || r.A.Mean == r.B.Mean {
		return NoSignificant
	}
	if r.WorsePct() > 0 {
		return Worse
	}
	return Better
}

// Regressions lists the significant regressions worse than pct percent.
func (c *Comparison) Regressions(pct float64) []ComparisonRow {
	var out []ComparisonRow
	for _, r := range c.Rows {
		if r.Verdict == Worse && r.WorsePct() > pct {
			out = append(out, r)
		}
	}
	return out
}

// CompareFormats lists the formats WriteComparison accepts.
var CompareFormats = []string{"table", "json", "markdown"}

// WriteComparison writes c in format, one of CompareFormats.
func WriteComparison(w io.Writer, c *Comparison, format string) error {
	var err error
	switch format {
	case "table":
		err = writeComparisonTable(w, c)
	case "markdown":
		err = writeComparisonMarkdown(w, c)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(c.toJSON())
	default:
		return fmt.Errorf("unknown compare format %q (valid: %s)", format, strings.Join(CompareFormats, ", "))
	}
	if err != nil {
		return fmt.Errorf("write %s comparison: %w", format, err)
	}
	return nil
}

var comparisonHeader = []string{"case", "metric", "A", "B", "change", "p", "verdict"}

func (r ComparisonRow) cells() []string {
	p := "-"
	if !math.IsNaN(r.P) {
		p = formatP(r.P)
	}
	change := "-"
	if !math.IsNaN(r.ChangePct) {
		change = fmt.Sprintf("%+.1f%%", r.ChangePct)
	}
	return []string{r.Key, r.Metric, formatValue(r.Metric, r.A), formatValue(r.Metric, r.B), change, p, string(r.Verdict)}
}

func formatP(p float64) string {
	if p < 0.0001 {
		return "<0.0001"
	}
	return strconv.FormatFloat(p, 'f', 4, 64)
}

// formatValue writes a mean in the unit people read it in.
func formatValue(metric string, s stats.Summary) string {
	switch metric {
	case model.ThroughputBPS:
		return strconv.FormatFloat(s.Mean/1e9, 'f', 2, 64) + " Gbit/s"
	case model.TransactionsPerS:
		return strconv.FormatFloat(s.Mean, 'f', 0, 64) + " tx/s"
	}
	unit := model.Metrics[metric].Unit
	if unit == "us" {
		unit = "µs"
	}
	return strings.TrimSpace(strconv.FormatFloat(s.Mean, 'f', 2, 64) + " " + unit)
}

func comparisonTitle(c *Comparison) string {
	return fmt.Sprintf("Run %d (%s, %s) against run %d (%s, %s): Welch's t-test, significant at p < %s",
		c.A.ID, c.A.Scenario, c.A.Started.UTC().Format("2006-01-02 15:04"),
		c.B.ID, c.B.Scenario, c.B.Started.UTC().Format("2006-01-02 15:04"), formatPlain(c.Alpha))
}

func comparisonNotes(c *Comparison) []string {
	var notes []string
	for _, k := range c.OnlyA {
		notes = append(notes, fmt.Sprintf("only in run %d: %s", c.A.ID, k))
	}
	for _, k := range c.OnlyB {
		notes = append(notes, fmt.Sprintf("only in run %d: %s", c.B.ID, k))
	}
	for _, u := range c.Unmeasured {
		notes = append(notes, "not compared: "+u)
	}
	return append(notes, c.Warnings...)
}

func comparisonSummary(c *Comparison) string {
	count := map[Verdict]int{}
	for _, r := range c.Rows {
		count[r.Verdict]++
	}
	return fmt.Sprintf("%d better, %d worse, %d without significant change", count[Better], count[Worse], count[NoSignificant])
}

func writeComparisonTable(w io.Writer, c *Comparison) error {
	rows := [][]string{comparisonHeader}
	for _, r := range c.Rows {
		rows = append(rows, r.cells())
	}
	right := []bool{false, false, true, true, true, true, false}
	widths := make([]int, len(comparisonHeader))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	var b strings.Builder
	b.WriteString(comparisonTitle(c) + "\n\n")
	for _, row := range rows {
		var line strings.Builder
		for i, cell := range row {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			if right[i] {
				line.WriteString(pad + cell)
			} else {
				line.WriteString(cell + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	b.WriteString("\n" + comparisonSummary(c) + "\n")
	for _, n := range comparisonNotes(c) {
		b.WriteString("note: " + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeComparisonMarkdown(w io.Writer, c *Comparison) error {
	var b strings.Builder
	b.WriteString(comparisonTitle(c) + "\n\n")
	writeMarkdownRow(&b, comparisonHeader)
	writeMarkdownRow(&b, []string{"---", "---", "--:", "--:", "--:", "--:", "---"})
	for _, r := range c.Rows {
		cells := r.cells()
		if r.Verdict != NoSignificant {
			cells[6] = "**" + cells[6] + "**"
		}
		writeMarkdownRow(&b, cells)
	}
	b.WriteString("\n" + comparisonSummary(c) + "\n")
	if notes := comparisonNotes(c); len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			b.WriteString("> note: " + markdownEscape(n) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type jsonComparison struct {
	A           jsonComparedRun `json:"a"`
	B           jsonComparedRun `json:"b"`
	Test        string          `json:"test"`
	Alpha       float64         `json:"alpha"`
	Rows        []jsonCompRow   `json:"rows"`
	OnlyInA     []string        `json:"only_in_a"`
	OnlyInB     []string        `json:"only_in_b"`
	NotCompared []string        `json:"not_compared"`
	Warnings    []string        `json:"warnings"`
}

type jsonComparedRun struct {
	ID       int64  `json:"id"`
	Scenario string `json:"scenario"`
	Started  string `json:"started"`
}

type jsonCompRow struct {
	Key       string   `json:"key"`
	Metric    string   `json:"metric"`
	Unit      string   `json:"unit"`
	AMean     float64  `json:"a_mean"`
	BMean     float64  `json:"b_mean"`
	AN        int      `json:"a_n"`
	BN        int      `json:"b_n"`
	ChangePct *float64 `json:"change_pct"` // null when A is zero
	P         *float64 `json:"p_value"`    // null when a side has one sample
	Verdict   Verdict  `json:"verdict"`
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func (c *Comparison) toJSON() jsonComparison {
	run := func(r model.Run) jsonComparedRun {
		return jsonComparedRun{ID: r.ID, Scenario: r.Scenario, Started: r.Started.UTC().Format("2006-01-02T15:04:05Z")}
	}
	out := jsonComparison{A: run(c.A), B: run(c.B), Test: "welch_t", Alpha: c.Alpha, Rows: []jsonCompRow{},
		OnlyInA: nonNil(c.OnlyA), OnlyInB: nonNil(c.OnlyB), NotCompared: nonNil(c.Unmeasured), Warnings: nonNil(c.Warnings)}
	for _, r := range c.Rows {
		out.Rows = append(out.Rows, jsonCompRow{
			Key: r.Key, Metric: r.Metric, Unit: model.Metrics[r.Metric].Unit,
			AMean: r.A.Mean, BMean: r.B.Mean, AN: r.A.N, BN: r.B.N,
			ChangePct: finite(r.ChangePct), P: finite(r.P), Verdict: r.Verdict,
		})
	}
	return out
}

// nonNil keeps empty lists as [] in JSON, so scripts need no null check.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}
