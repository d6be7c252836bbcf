// Command cnbench measures what a container network setup costs: it builds
// each network mode from real kernel parts, runs traffic through it,
// stores every sample and reports the overhead against the native host.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"cnbench/internal/scenario"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2 // invalid input: nothing was created
	exitRegression  = 3 // compare --fail-on-regression found one
	exitInterrupted = 130
)

// exitError carries the process exit code with an error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

// exitCode picks the code for an error that reached main.
func exitCode(err error) int {
	var ee *exitError
	var se *scenario.Error
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &se):
		return exitUsage
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	default:
		return exitFailure
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// execute runs the command line with injected streams, so the CLI can be
// tested in memory.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "cnbench:", err)
	}
	return exitCode(err)
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "cnbench",
		Short: "Measure container network performance",
		Long: `cnbench builds container network modes (veth, bridge, macvlan, NAT, ...)
from real kernel parts in network namespaces, runs TCP traffic through them
with its own engine, and reports throughput, latency percentiles and CPU
cost against the native host baseline.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	root.AddCommand(newRunCommand(), newReportCommand(), newDoctorCommand(), newCleanupCommand(),
		newVersionCommand(), newEngineCommand(), newAwakeCommand(), newSuitesCommand(), newValidateCommand())
	root.AddCommand(newPlotCommand(), newCompareCommand(), newExportCommand(), newRunsCommand())
	root.AddCommand(newGuestAgentCommand())
	root.AddCommand(newAgentCommand())
	return root
}
