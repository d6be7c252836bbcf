package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"cnbench/internal/report"
	"cnbench/internal/store"
)

func newReportCommand() *cobra.Command {
	var db, format string
	cmd := &cobra.Command{
		Use:   "report [RUN]",
		Short: "Print a stored run's results",
		Long: `Report prints one row per case with the main metrics, their 95% confidence
intervals, and the overhead against the host baseline of the same topology
and workload. Without RUN, the latest run. JSON is the stable machine
interface.`,
		Example: `  cnbench report
  cnbench report 3 --format json
  cnbench report --format markdown > results.md`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := report.ParseFormat(format); err != nil {
				return usageError(err)
			}
			st, err := store.Open(db)
			if err != nil {
				return err
			}
			defer st.Close()
			id, err := runID(st, args)
			if err != nil {
				return err
			}
			return printReport(cmd, st, id, format)
		},
	}
	cmd.Flags().StringVar(&db, "db", defaultDB, "SQLite database to read")
	cmd.Flags().StringVar(&format, "format", "table", "table, json, csv or markdown")
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
