package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"cnbench/internal/report"
)

func newPlotCommand() *cobra.Command {
	var db, kind, out string
	var kinds strings.Builder
	for _, k := range report.ChartKinds {
		fmt.Fprintf(&kinds, "  %-9s %s\n", k.Name, k.Help)
	}
	cmd := &cobra.Command{
		Use:   "plot [RUN] --kind KIND -o FILE.svg|.png|.pdf",
		Short: "Draw a run's charts to an SVG, PNG or PDF file",
		Long: `Plot draws the charts of one kind, the same as in the HTML report, into
one file; when the run gives several charts of the kind (one per workload
or topology), they are stacked. The file's extension picks the format.
RUN is a run number, an export file, or by default the latest run.

Kinds:
` + kinds.String(),
		Example: `  cnbench plot --kind bars -o bars.svg
  cnbench plot 3 --kind flows -o flows.png
  cnbench plot run3.json --kind cdf -o latency.pdf`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if kind == "" {
				return usageError(fmt.Errorf("--kind is required (one of %s)", strings.Join(report.ChartKindNames(), ", ")))
			}
			if out == "" {
				return usageError(errors.New("-o FILE is required; its extension (.svg, .png, .pdf) picks the format"))
			}
			format, err := report.ChartFormat(out)
			if err != nil {
				return usageError(err)
			}
			if _, err := report.Charts(&report.Report{}, kind); err != nil {
				return usageError(err)
			}
			res, err := loadRun(db, args)
			if err != nil {
				return err
			}
			charts, err := report.Charts(report.Build(res), kind)
			if err != nil {
				return err
			}
			if len(charts) == 0 {
				return fmt.Errorf("run %d has no %s chart: %s", res.Run.ID, kind, report.NoChartReason(kind))
			}
			return writeOutput(cmd, out, func(w io.Writer) error { return report.WriteCharts(w, charts, format) })
		},
	}
	cmd.Flags().StringVar(&db, "db", defaultDB, "SQLite database to read")
	cmd.Flags().StringVar(&kind, "kind", "", "chart kind: "+strings.Join(report.ChartKindNames(), ", "))
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write: .svg, .png or .pdf")
	return cmd
}
