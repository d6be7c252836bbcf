package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"cnbench/internal/cleanup"
	"cnbench/internal/explain"
)

func newCleanupCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cleanup",
		Short: "Remove what killed cnbench runs left behind",
		Long: `Cleanup removes the processes, network namespaces (with every link,
route and nftables table in them) and cgroups of cnbench runs that are no
longer alive, and the profile recordings (--explain) such runs left in
the temporary directory, and prints what it removed. Objects of runs still going are
left alone, and nothing without cnbench's "cnb-" prefix is ever touched.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Geteuid() != 0 {
				return errors.New("cleanup needs root")
			}
			removed, err := cleanup.Sweep()
			recordings, recErr := explain.RemoveOrphanedRecordings("")
			err = errors.Join(err, recErr)
			out := cmd.OutOrStdout()
			for _, r := range recordings {
				fmt.Fprintln(out, "removed profile recording", r)
			}
			for _, p := range removed.Processes {
				fmt.Fprintln(out, "killed process", p)
			}
			for _, n := range removed.Namespaces {
				fmt.Fprintln(out, "removed namespace", n)
			}
			for _, c := range removed.Cgroups {
				fmt.Fprintln(out, "removed cgroup", c)
			}
			for _, t := range removed.Tokens {
				fmt.Fprintln(out, "released run token", t)
			}
			for _, k := range removed.Kept {
				fmt.Fprintln(out, "left alone:", k)
			}
			if removed.Empty() && len(recordings) == 0 {
				fmt.Fprintln(out, "nothing to clean up")
			}
			return err
		},
	}
}
