package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"cnbench/internal/model"
	"cnbench/internal/stats"
	"cnbench/internal/workload"
)

// Formats lists the formats Write accepts.
var Formats = []string{"table", "json", "csv", "markdown", "html"}

// ParseFormat checks a format name before any work is done.
func ParseFormat(format string) (string, error) {
	if !slices.Contains(Formats, format) {
		return "", fmt.Errorf("unknown report format %q (valid: %s)", format, strings.Join(Formats, ", "))
	}
	return format, nil
}

// Write writes rep to w in format, one of Formats.
func Write(w io.Writer, rep *Report, format string) error {
	if _, err := ParseFormat(format); err != nil {
		return err
	}
	var err error
	switch format {
	case "table":
		err = writeTable(w, rep)
	case "json":
		err = writeJSON(w, rep)
	case "csv":
		err = writeCSV(w, rep)
	case "markdown":
		err = writeMarkdown(w, rep)
	case "html":
		err = WriteHTML(w, rep)
	}
	if err != nil {
		return fmt.Errorf("write %s report: %w", format, err)
	}
	return nil
}

func writeJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep.toJSON())
}

var csvHeader = []string{
	"run", "case_index", "key", "mode", "topology", "workload", "engine", "status",
	"metric", "unit", "mean", "stddev", "min", "max", "ci95_low", "ci95_high", "n", "overhead_pct", "vs_host_pct",
	"vs_host_ratio", "vs_host_ratio_ci95_low", "vs_host_ratio_ci95_high",
	"vs_host_change_pct", "vs_host_change_ci95_low", "vs_host_change_ci95_high",
	"vs_host_n", "vs_host_paired", "vs_host_verdict",
}

// writeCSV writes one row per case and metric. A case without metrics
// still gets one row, with the metric columns empty, so that skipped and
// failed cases stay visible in a spreadsheet.
func writeCSV(w io.Writer, rep *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	runID := strconv.FormatInt(rep.Run.ID, 10)
	for _, c := range rep.Cases {
		prefix := []string{runID, strconv.Itoa(c.Index), c.Key, c.Mode, c.Topology, c.Workload, c.Engine, string(c.Status)}
		if len(c.Metrics) == 0 {
			if err := cw.Write(append(prefix, make([]string, len(csvHeader)-len(prefix))...)); err != nil {
				return err
			}
			continue
		}
		for _, name := range sortedMetricNames(c.Metrics) {
			s := c.Metrics[name]
			overhead, vsHost := "", ""
			if o, ok := c.OverheadPct[name]; ok {
				overhead, vsHost = formatFloat(o), formatFloat(c.VsHostPct[name])
			}
			row := append(slices.Clone(prefix), name, model.Metrics[name].Unit,
				formatFloat(s.Mean), formatFloat(s.Stddev), formatFloat(s.Min), formatFloat(s.Max),
				formatFloat(s.CI95Low), formatFloat(s.CI95High), strconv.Itoa(s.N), overhead, vsHost)
			row = append(row, changeCells(c.VsHost, name)...)
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// changeCells are the CSV cells of a metric's change against host, empty
// without one.
func changeCells(changes map[string]Change, name string) []string {
	ch, ok := changes[name]
	if !ok {
		return make([]string, 9)
	}
	pct, low, high := ch.Pct()
	return []string{
		formatFloat(ch.Ratio.Ratio), formatFloat(ch.CI95Low), formatFloat(ch.CI95High),
		formatFloat(pct), formatFloat(low), formatFloat(high),
		strconv.Itoa(ch.N), strconv.FormatBool(ch.Paired), string(ch.Verdict),
	}
}

func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// tableHeader names the columns of the text and Markdown tables; the
// cells come from tableRow.
var tableHeader = []string{
	"#", "mode", "topology", "workload", "params", "engine", "status",
	"result ±95% CI", "p50 µs", "p99 µs", "cpu snd %", "cpu rcv %", "vs baseline [95% CI]", "verdict",
}

// rightAligned marks the numeric columns.
var rightAligned = []bool{true, false, false, false, false, false, false, true, true, true, true, true, true, false}

// tableRow gives the cells of one case. For a case without metrics it
// returns the fixed columns and the reason as the last cell.
func tableRow(c CaseReport) []string {
	row := []string{strconv.Itoa(c.Index), c.Mode, c.Topology, c.Workload, compactParams(c.Params), c.Engine, string(c.Status)}
	if len(c.Metrics) == 0 {
		reason := c.Reason
		if reason == "" {
			reason = "no samples"
		}
		return append(row, reason)
	}
	primary := workload.PrimaryMetric(c.Workload)
	// The change names its metric, so its sign reads without a key:
	// "-37.1% [-39.0, -35.2] throughput" is slower than host, "+25.0%
	// [+20.1, +30.2] mean round trip" too.
	vsHost, verdict := "-", "-"
	if ch, ok := c.VsHost[primary]; ok {
		vsHost, verdict = formatChange(ch, quantity(primary)), formatVerdict(ch)
	} else if v, ok := c.VsHostPct[primary]; ok {
		vsHost = fmt.Sprintf("%+.1f%% %s", v, quantity(primary))
	}
	return append(row,
		formatPrimary(primary, c.Metrics),
		formatMetric(c.Metrics, model.LatencyP50US, 1),
		formatMetric(c.Metrics, model.LatencyP99US, 1),
		formatMetric(c.Metrics, model.CPUSenderPct, 1),
		formatMetric(c.Metrics, model.CPUReceiverPct, 1),
		vsHost, verdict,
	)
}

func formatPrimary(name string, metrics map[string]stats.Summary) string {
	s, ok := metrics[name]
	if !ok {
		return "-"
	}
	scale, decimals, unit := 1.0, 0, "tx/s"
	switch {
	case model.Metrics[name].Unit == "bit/s":
		scale, decimals, unit = 1e9, 2, "Gbit/s"
	case name == model.ConnectionsPerS:
		unit = "conn/s"
	case model.Metrics[name].Unit == "us":
		decimals, unit = 1, "µs"
	}
	value := strconv.FormatFloat(s.Mean/scale, 'f', decimals, 64)
	// One sample has no spread to show; "± 0" would claim a precision the
	// measurement does not have.
	if s.N < 2 {
		return value + " " + unit
	}
	return value + " ± " + strconv.FormatFloat(s.CIHalfWidth()/scale, 'f', decimals, 64) + " " + unit
}

func formatMetric(metrics map[string]stats.Summary, name string, decimals int) string {
	s, ok := metrics[name]
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(s.Mean, 'f', decimals, 64)
}

// compactParams renders the parameters that tell cases apart, e.g.
// "flows=4 msg=128K pin=different_cores". Durations and sample counts
// are left out: they are the same across a scenario and would only widen
// the table.
func compactParams(p model.Params) string {
	var parts []string
	add := func(name string, value string) { parts = append(parts, name+"="+value) }
	if p.Flows != 0 {
		add("flows", strconv.Itoa(p.Flows))
	}
	if p.MsgSize != 0 {
		add("msg", compactSize(p.MsgSize))
	}
	if p.RequestSize != 0 {
		add("req", compactSize(p.RequestSize))
	}
	if p.ResponseSize != 0 {
		add("resp", compactSize(p.ResponseSize))
	}
	if p.Rate != "" {
		add("offered", p.Rate)
	}
	if p.Pattern != "" {
		add("pattern", p.Pattern)
	}
	if p.Clients != 0 {
		add("clients", strconv.Itoa(p.Clients))
	}
	if p.Servers != 0 {
		add("servers", strconv.Itoa(p.Servers))
	}
	if p.Engines != "" {
		add("engines", p.Engines)
	}
	if p.NICRate != "" {
		add("rate", p.NICRate)
	}
	if p.MTU != 0 {
		add("mtu", strconv.Itoa(p.MTU))
	}
	if f := model.FamilyKey(p.Family); f != "" {
		add("family", f)
	}
	for _, o := range []struct{ name, value string }{
		{"gro", p.GRO}, {"gso", p.GSO}, {"tso", p.TSO}, {"txcsum", p.TxChecksum},
		{"cc", p.CC}, {"nodelay", p.NoDelay}, {"pin", p.Placement},
	} {
		if o.value != "" {
			add(o.name, o.value)
		}
	}
	for _, o := range []struct {
		name  string
		value int
	}{{"mss", p.MSS}, {"sndbuf", p.SendBuffer}, {"rcvbuf", p.ReceiveBuffer}} {
		if o.value != 0 {
			add(o.name, compactSize(o.value))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// compactSize writes whole binary multiples with a K or M suffix, the way
// message sizes are usually chosen and quoted.
func compactSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "M"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "K"
	default:
		return strconv.Itoa(n)
	}
}

func title(rep *Report) string {
	return fmt.Sprintf("Run %d: scenario %q, started %s, %s",
		rep.Run.ID, rep.Run.Scenario, rep.Run.Started.UTC().Format("2006-01-02 15:04:05 UTC"), rep.Run.Status)
}

func writeTable(w io.Writer, rep *Report) error {
	rows := [][]string{tableHeader}
	for _, c := range rep.Cases {
		rows = append(rows, tableRow(c))
	}
	widths := make([]int, len(tableHeader))
	for _, row := range rows {
		for i, cell := range row {
			// The reason of a short row runs on freely instead of
			// widening a column it does not belong to.
			if len(row) < len(tableHeader) && i == len(row)-1 {
				break
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	var b strings.Builder
	b.WriteString(title(rep) + "\n\n")
	for _, row := range rows {
		var line strings.Builder
		for i, cell := range row {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", max(0, widths[i]-utf8.RuneCountInString(cell)))
			if len(row) < len(tableHeader) && i == len(row)-1 {
				pad = ""
			}
			if rightAligned[i] {
				line.WriteString(pad + cell)
			} else {
				line.WriteString(cell + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	for _, warning := range rep.Warnings {
		b.WriteString("\nnote: " + warning)
	}
	if len(rep.Warnings) > 0 {
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMarkdown(w io.Writer, rep *Report) error {
	var b strings.Builder
	b.WriteString(title(rep) + "\n\n")
	writeMarkdownRow(&b, tableHeader)
	align := make([]string, len(tableHeader))
	for i := range align {
		align[i] = "---"
		if rightAligned[i] {
			align[i] = "--:"
		}
	}
	writeMarkdownRow(&b, align)
	for _, c := range rep.Cases {
		row := tableRow(c)
		// Markdown rows must be complete: the reason takes the result
		// column and the rest stay empty.
		for len(row) < len(tableHeader) {
			row = append(row, "")
		}
		writeMarkdownRow(&b, row)
	}
	if len(rep.Warnings) > 0 {
		b.WriteString("\n")
		for _, warning := range rep.Warnings {
			b.WriteString("> note: " + markdownEscape(warning) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMarkdownRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, cell := range cells {
		b.WriteString(" " + markdownEscape(cell) + " |")
	}
	b.WriteString("\n")
}

func markdownEscape(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
