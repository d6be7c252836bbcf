package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"cnbench/internal/report"
)

func newCompareCommand() *cobra.Command {
	var (
		db, format string
		failOn     float64
		alpha      float64
		metrics    []string
	)
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs case by case, with a significance test",
		Long: `Compare matches the cases of two runs by their key and, for each metric,
prints B's change against A in percent, the p-value of Welch's t-test on
the per-sample values, and a verdict: better, worse, or no significant
change (p >= --alpha). Whether higher is better depends on the metric.
RUN_A and RUN_B are run numbers or export files.

With --fail-on-regression PCT, compare exits with status 3 when some
significant change makes a metric worse by more than PCT percent, so it
can gate a CI job. Exit status 1 means compare itself failed; 2, bad usage.`,
		Example: `  cnbench compare 3 5
  cnbench compare baseline.json 5 --fail-on-regression 5
  cnbench compare 3 5 --format markdown --metrics throughput_bps,latency_p99_us`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(report.CompareFormats, format) {
				return usageError(fmt.Errorf("unknown format %q (valid: %s)", format, strings.Join(report.CompareFormats, ", ")))
			}
			if alpha <= 0 || alpha >= 1 {
				return usageError(fmt.Errorf("--alpha must lie between 0 and 1, got %v", alpha))
			}
			if cmd.Flags().Changed("fail-on-regression") && failOn < 0 {
				return usageError(fmt.Errorf("--fail-on-regression takes a percentage >= 0, got %v", failOn))
			}
			a, err := loadRun(db, args[:1])
			if err != nil {
				return err
			}
			b, err := loadRun(db, args[1:])
			if err != nil {
				return err
			}
			c := report.Compare(a, b, metrics, alpha)
			if err := report.WriteComparison(cmd.OutOrStdout(), c, format); err != nil {
				return err
			}
			if !cmd.Flags().Changed("fail-on-regression") {
				return nil
			}
			if regs := c.Regressions(failOn); len(regs) > 0 {
				worst := regs[0]
				for _, r := range regs[1:] {
					if r.WorsePct() > worst.WorsePct() {
						worst = r
					}
				}
				return &exitError{code: exitRegression, err: fmt.Errorf(
					"%d significant regressions above %v%%; the worst: %s %s %.1f%% worse (p = %.4f)",
					len(regs), failOn, worst.Key, worst.Metric, worst.WorsePct(), worst.P)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&db, "db", defaultDB, "SQLite database to read run numbers from")
	fl.StringVar(&format, "format", "table", "table, json or markdown")
	fl.Float64Var(&failOn, "fail-on-regression", 0, "exit with status 3 if a significant regression exceeds this many percent")
	fl.Float64Var(&alpha, "alpha", 0.05, "significance level of the t-test")
	fl.StringSliceVar(&metrics, "metrics", nil, "metrics to compare (default: "+strings.Join(report.CompareMetrics, ",")+")")
	return cmd
}
