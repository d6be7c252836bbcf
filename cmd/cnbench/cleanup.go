package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"cnbench/internal/cleanup"
	"cnbench/internal/explain"
	"cnbench/internal/kube"
	"cnbench/internal/netns"
)

func newCleanupCommand() *cobra.Command {
	var kubeconfig, kubeContext string
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove what killed cnbench runs left behind",
		Long: `Cleanup removes the processes, network namespaces (with every link,
route and nftables table in them) and cgroups of cnbench runs that are no
longer alive, the profile recordings (--explain) such runs left in the
temporary directory, and the records of clusters "cluster up" started
whose process is gone, and prints what it removed. Objects of runs still
going are left alone, and nothing without cnbench's "cnb-" prefix is
ever touched.

With --kubeconfig it first deletes what such runs left on that Kubernetes
cluster: the namespaces, pods, Services and Secrets labelled with the
token of a run of this machine that died. Objects of runs this machine
does not know (another controller's) are listed and left alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Geteuid() != 0 {
				return errors.New("cleanup needs root")
			}
			var kubeErr error
			onCluster := 0
			if kubeconfig != "" {
				onCluster, kubeErr = sweepKubernetes(cmd, kube.Config{Kubeconfig: kubeconfig, Context: kubeContext})
			}
			removed, err := cleanup.Sweep()
			err = errors.Join(kubeErr, err)
			recordings, recErr := explain.RemoveOrphanedRecordings("")
			clusters, clusterErr := forgetDeadClusters()
			err = errors.Join(err, recErr, clusterErr)
			out := cmd.OutOrStdout()
			for _, tok := range clusters {
				fmt.Fprintf(out, "forgot cluster %s (its process is gone)\n", tok)
			}
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
			if removed.Empty() && len(recordings) == 0 && len(clusters) == 0 && onCluster == 0 {
				fmt.Fprintln(out, "nothing to clean up")
			}
			return err
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "also delete what dead runs left on the Kubernetes cluster this kubeconfig names")
	cmd.Flags().StringVar(&kubeContext, "context", "", "the kubeconfig's context (default: its current one)")
	return cmd
}

// sweepKubernetes deletes what runs of this machine that died left on a
// cluster, before the local sweep forgets which runs those were.
func sweepKubernetes(cmd *cobra.Command, cfg kube.Config) (int, error) {
	sw, err := kube.Sweep(cmd.Context(), cfg, func(tok netns.Token) (bool, string) {
		if !tok.Valid() {
			return false, "not a run token"
		}
		o, err := cleanup.OwnerOf(tok)
		switch {
		case err != nil:
			return false, "no run of this machine"
		case o.Alive():
			return false, fmt.Sprintf("still running, pid %d", o.PID)
		}
		return true, ""
	})
	out := cmd.OutOrStdout()
	for _, d := range sw.Deleted {
		fmt.Fprintln(out, "deleted on the cluster:", d)
	}
	for _, k := range sw.Kept {
		fmt.Fprintln(out, "left alone on the cluster:", k)
	}
	return len(sw.Deleted), err
}
