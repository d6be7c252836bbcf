package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"cnbench/internal/explain"
	"cnbench/internal/report"
)

func newExplainCommand() *cobra.Command {
	var db, format, out string
	cmd := &cobra.Command{
		Use:   "explain [RUN] [CASE]",
		Short: "Show where an explained run's CPU time went, stage by stage",
		Long: `Explain shows, for each case of a run made with --explain, the CPU time of
every CPU of the machine per GB received (streams) or per transaction
(request/response), split into the stages of the packet's path (TCP,
netfilter, bridge, veth, the scheduler, ...), and how much each stage adds
over the host case of the same topology, workload and parameters. Idle
time is left out; perf's own time is shown apart. Each case also says how
the stacks' total compares with the machine's busy time by /proc/stat.

RUN defaults to the latest run; it may be a file written by cnbench export.
CASE picks cases: a case number, or text found in the case key
(e.g. bridge/chc). docs/explain.md describes the stages and how to read them.`,
		Example: `  cnbench run --modes host,bridge,nat --topologies chc --workloads tcp_stream --explain
  cnbench explain
  cnbench explain 4 bridge/chc
  cnbench explain 4 --format json`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "table" && format != "json" {
				return usageError(fmt.Errorf("--format: expected table or json, got %q", format))
			}
			var pick string
			switch {
			case len(args) == 2:
				pick, args = args[1], args[:1]
			case len(args) == 1 && strings.Trim(args[0], "0123456789") != "" && !fileExists(args[0]):
				// Not a run number nor an export file: a case.
				pick, args = args[0], nil
			}
			res, err := loadRun(db, args)
			if err != nil {
				return err
			}
			rep := report.Build(res)
			if pick != "" {
				rep.Cases = pickCases(rep.Cases, pick)
				if len(rep.Cases) == 0 {
					return usageError(fmt.Errorf("no case of run %d is %q: give a case number or text of a case key", res.Run.ID, pick))
				}
			}
			return writeOutput(cmd, out, func(w io.Writer) error {
				if format == "json" {
					return writeExplanationsJSON(w, rep)
				}
				return report.WriteExplanations(w, rep, explain.Default.Stages)
			})
		},
	}
	cmd.Flags().StringVar(&db, "db", defaultDB, "SQLite database to read")
	cmd.Flags().StringVar(&format, "format", "table", "table or json")
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write (default: standard output)")
	return cmd
}

// pickCases keeps the case of that number, or those whose key holds the
// text.
func pickCases(cases []report.CaseReport, pick string) []report.CaseReport {
	var kept []report.CaseReport
	n, numErr := strconv.Atoi(pick)
	for _, c := range cases {
		if (numErr == nil && c.Index == n) || (numErr != nil && strings.Contains(c.Key, pick)) {
			kept = append(kept, c)
		}
	}
	return kept
}

// writeExplanationsJSON writes the explained cases with their keys.
func writeExplanationsJSON(w io.Writer, rep *report.Report) error {
	type jsonCase struct {
		Index       int                 `json:"index"`
		Key         string              `json:"key"`
		Summary     string              `json:"summary,omitempty"`
		Explanation *report.Explanation `json:"explanation"`
	}
	out := struct {
		Run    int64           `json:"run"`
		Stages []explain.Stage `json:"stages"`
		Cases  []jsonCase      `json:"cases"`
	}{Run: rep.Run.ID, Stages: explain.Default.Stages, Cases: []jsonCase{}}
	for _, c := range rep.Cases {
		if c.Explanation != nil {
			out.Cases = append(out.Cases, jsonCase{c.Index, c.Key, c.Explanation.Summary(c.Case), c.Explanation})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
