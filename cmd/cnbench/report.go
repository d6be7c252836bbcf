package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"cnbench/internal/report"
	"cnbench/internal/store"
)

func newReportCommand() *cobra.Command {
	var db, format, out string
	cmd := &cobra.Command{
		Use:   "report [RUN]",
		Short: "Print a stored run's results",
		Long: `Report prints one row per case with the main metrics, their 95% confidence
intervals, and the change against the host baseline of the same topology
and workload: a ratio of the samples (paired where the cases took turns)
with its 95% interval and a verdict. Without RUN, the latest run; RUN may also be a file written
by cnbench export. JSON is the stable machine interface. HTML is one
self-contained page with every chart (see cnbench plot), for a browser.`,
		Example: `  cnbench report
  cnbench report 3 --format json
  cnbench report --format markdown > results.md
  cnbench report 3 --format html -o report.html
  cnbench report run3.json --format html -o report.html`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := report.ParseFormat(format); err != nil {
				return usageError(err)
			}
			res, err := loadRun(db, args)
			if err != nil {
				return err
			}
			return writeOutput(cmd, out, func(w io.Writer) error { return report.Write(w, report.Build(res), format) })
		},
	}
	cmd.Flags().StringVar(&db, "db", defaultDB, "SQLite database to read")
	cmd.Flags().StringVar(&format, "format", "table", "table, json, csv, markdown or html")
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write (default: standard output)")
	return cmd
}

// runID resolves the optional RUN argument; without it, the latest run.
func runID(st *store.Store, args []string) (int64, error) {
	if len(args) == 0 {
		id, err := st.LatestRunID()
		if errors.Is(err, store.ErrNoRuns) {
			return 0, errors.New("the database holds no runs yet: start one with `cnbench run`")
		}
		return id, err
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || id <= 0 {
		return 0, usageError(fmt.Errorf("RUN must be a run number, got %q", args[0]))
	}
	return id, nil
}
