package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"cnbench/internal/model"
	"cnbench/internal/store"
)

func newRunsCommand() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the runs in the database, newest first",
		Long: `Runs lists every stored run, newest first: its number (what report, plot,
compare and export take), scenario, start time, duration, status, and its
cases counted by status.`,
		Example: `  cnbench runs
  cnbench runs --db results.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := store.OpenExisting(db)
			if err != nil {
				return err
			}
			defer st.Close()
			runs, err := st.Runs()
			if err != nil {
				return err
			}
			if len(runs) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no runs yet: start one with `cnbench run`")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSCENARIO\tSTARTED\tDURATION\tSTATUS\tCASES")
			for _, r := range runs {
				duration := "-"
				if !r.Finished.IsZero() {
					duration = r.Finished.Sub(r.Started).Round(time.Second).String()
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Scenario, r.Started.Local().Format("2006-01-02 15:04"),
					duration, r.Status, caseCounts(r))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&db, "db", defaultDB, "SQLite database to read")
	return cmd
}

// caseCounts writes "12 (10 ok, 1 skipped, 1 failed)", leaving out the
// statuses no case has.
func caseCounts(r store.RunSummary) string {
	var parts []string
	for _, s := range []model.Status{model.StatusOK, model.StatusSkipped, model.StatusFailed, model.StatusPending} {
		if n := r.Cases[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprint(r.TotalCases)
	}
	return fmt.Sprintf("%d (%s)", r.TotalCases, strings.Join(parts, ", "))
}
