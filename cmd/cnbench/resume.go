package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"cnbench/internal/report"
	"cnbench/internal/runner"
	"cnbench/internal/store"
)

// casesFlags change what a run's cases are; a resumed run keeps the cases
// it was stored with, so they cannot be given with --resume.
var casesFlags = []string{"duration", "warmup", "samples", "modes", "topologies", "workloads", "flows",
	"msg-size", "placement", "family", "seed", "target-ci", "max-samples"}

// resumeRun continues a stored run and prints its results.
func resumeRun(cmd *cobra.Command, args []string, f runFlags) error {
	if len(args) > 0 {
		return usageError(fmt.Errorf("--resume takes no scenario (got %q): the run's stored scenario is used", args[0]))
	}
	var given []string
	for _, name := range casesFlags {
		if cmd.Flags().Changed(name) {
			given = append(given, "--"+name)
		}
	}
	if len(given) > 0 {
		return usageError(fmt.Errorf("--resume keeps the cases the run was stored with; drop %s", strings.Join(given, ", ")))
	}
	if f.resume <= 0 {
		return usageError(fmt.Errorf("--resume: expected a run id (see `cnbench runs`), got %d", f.resume))
	}
	if _, err := report.ParseFormat(f.format); err != nil {
		return usageError(err)
	}
	if f.order != runner.OrderShuffled && f.order != runner.OrderSequential {
		return usageError(fmt.Errorf("--order: expected %s or %s, got %q", runner.OrderShuffled, runner.OrderSequential, f.order))
	}
	if os.Geteuid() != 0 {
		return errors.New("run needs root: it creates network namespaces, links and cgroups")
	}
	st, err := store.OpenExisting(f.db)
	if err != nil {
		return err
	}
	defer st.Close()
	opts := runner.Options{Order: f.order}
	if !f.quiet {
		opts.Progress = cmd.ErrOrStderr()
	}
	r, err := runner.New(st, opts)
	if err != nil {
		return err
	}
	runErr := r.Resume(cmd.Context(), f.resume)
	if err := r.Close(); err != nil {
		runErr = errors.Join(runErr, err)
	}
	switch {
	case errors.Is(runErr, store.ErrRunNotFound):
		return usageError(fmt.Errorf("--resume %d: no such run in %s", f.resume, f.db))
	case errors.Is(runErr, runner.ErrRunComplete):
		if !f.quiet {
			fmt.Fprintf(cmd.ErrOrStderr(), "run %d is complete; nothing to resume\n", f.resume)
		}
		runErr = nil
	case errors.Is(runErr, runner.ErrRunAlive):
		return runErr
	}
	return endRun(cmd, st, f.resume, runErr, f, fmt.Sprintf("; resume it again with --resume %d", f.resume))
}
