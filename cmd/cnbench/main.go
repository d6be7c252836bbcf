// Command cnbench measures what a container network setup costs: it builds
// each network mode from real kernel parts, runs traffic through it,
// stores every sample and reports the overhead against the native host.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"cnbench/internal/inputfile"
	"cnbench/internal/scenario"
	"cnbench/internal/stopsignal"
)

// Exit codes; docs/exit-codes.md is their one table.
const (
	exitOK           = 0
	exitFailure      = 1 // something failed: a case, the run, reading or writing
	exitUsage        = 2 // invalid input: nothing was created
	exitRegression   = 3 // compare --fail-on-regression found one
	exitIncomparable = 4 // validate: the native engine behind or apart from a reference, its numbers accurate
	exitInterrupted  = 130
)

// exitCoder is an error that says what the process exits with. The first
// one in an error's chain decides.
type exitCoder interface {
	error
	ExitCode() int
}

// exitError carries the process exit code with an error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

// stopSignals end a command cleanly: Ctrl-C, kill's default, the
// terminal going away, and Ctrl-\ (whose default, a goroutine dump, would
// leave a run's namespaces behind).
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// stopGrace bounds a clean stop after the first signal: a run's teardown
// takes seconds.
const stopGrace = 2 * time.Minute

// interrupted marks err as the end of a command its context stopped,
// with the code of the signal that stopped it (130 without one).
func interrupted(ctx context.Context, err error) error {
	var ec exitCoder
	if errors.As(context.Cause(ctx), &ec) {
		return &exitError{code: ec.ExitCode(), err: err}
	}
	return &exitError{code: exitInterrupted, err: err}
}

// stopReason says what stopped a command: the signal, or "interrupted".
func stopReason(ctx context.Context) string {
	var se stopsignal.Error
	if errors.As(context.Cause(ctx), &se) {
		return se.Error()
	}
	return "interrupted"
}

// exitCode picks the code for an error that reached main.
func exitCode(err error) int {
	var ec exitCoder
	var se *scenario.Error
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ec):
		return ec.ExitCode()
	case errors.As(err, &se), errors.Is(err, inputfile.ErrRefused):
		return exitUsage
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	default:
		return exitFailure
	}
}

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, len(stopSignals))
	signal.Notify(sigs, stopSignals...)
	go func() {
		// The first signal stops the command cleanly. A second one, or a
		// stop that takes longer than stopGrace (a command stuck where it
		// does not look at its context, as a report once was on a NaN),
		// ends the process at once; cleanup removes what it leaves.
		first, ok := (<-sigs).(syscall.Signal)
		if !ok {
			return
		}
		cancel(stopsignal.Error{Signal: first})
		select {
		case s := <-sigs:
			fmt.Fprintf(os.Stderr, "cnbench: %v again: exiting now; `cnbench cleanup` removes what is left\n", s)
		case <-time.After(stopGrace):
			fmt.Fprintf(os.Stderr, "cnbench: still stopping %v after %v: exiting; `cnbench cleanup` removes what is left\n", first, stopGrace)
		}
		os.Exit(stopsignal.Error{Signal: first}.ExitCode())
	}()
	stop := func() { cancel(stopsignal.Error{Signal: syscall.SIGPIPE}) }
	code := execute(ctx, os.Args[1:], os.Stdin, pipeWriter(os.Stdout, stop), pipeWriter(os.Stderr, stop))
	signal.Stop(sigs)
	cancel(nil)
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
	cmd, err := root.ExecuteContextC(ctx)
	var ec exitCoder
	switch {
	case err == nil || errors.As(err, &ec):
	case errors.Is(err, context.Canceled):
		err = interrupted(ctx, err)
	case cmd == root:
		// The root command runs nothing: its only errors are a command
		// line that names no command.
		err = usageError(err)
	}
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
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return checkFlagValues(cmd) }
	root.AddCommand(newRunCommand(), newReportCommand(), newDoctorCommand(), newCleanupCommand(),
		newVersionCommand(), newEngineCommand(), newAwakeCommand(), newReachCommand(), newSuitesCommand(), newValidateCommand())
	root.AddCommand(newPlotCommand(), newCompareCommand(), newExportCommand(), newRunsCommand(), newExplainCommand())
	root.AddCommand(newGuestAgentCommand())
	root.AddCommand(newAgentCommand(), newImageCommand(), newClusterCommand())
	argsAreUsage(root)
	return root
}

// checkFlagValues refuses what a flag given on the command line cannot
// mean: an empty value or an empty item of a list (--flows "" would
// otherwise quietly stand for the default), and NaN or an infinity in a
// number, which the flag parser accepts (--fail-on-regression NaN would
// turn a CI gate off without a word).
func checkFlagValues(cmd *cobra.Command) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if err == nil {
			if msg := flagValueProblem(f); msg != "" {
				err = usageError(fmt.Errorf("--%s: %s", f.Name, msg))
			}
		}
	})
	return err
}

// flagValueProblem says what is wrong with a given flag's value, or "".
func flagValueProblem(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "string":
		if f.Value.String() == "" {
			return "empty; give a value, or leave the flag out for the default"
		}
	case "stringSlice":
		items, _ := f.Value.(pflag.SliceValue)
		if items == nil || len(items.GetSlice()) == 0 || slices.Contains(items.GetSlice(), "") {
			return fmt.Sprintf("empty or with an empty item (%q); give values, or leave the flag out for the default", f.Value.String())
		}
	case "float64":
		if v, err := strconv.ParseFloat(f.Value.String(), 64); err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			return "expected a finite number, got " + f.Value.String()
		}
	}
	return ""
}

// argsAreUsage makes wrong arguments to c and its subcommands a usage
// error, as wrong flags are.
func argsAreUsage(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError(err)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		argsAreUsage(sub)
	}
}

// pipeWriter writes to a copy of f's descriptor. Go ends a process that
// writes to a closed pipe on descriptors 1 and 2 at once, by SIGPIPE,
// which would leave a run's namespaces behind (cnbench run | head -1);
// through a copy the write fails instead, and the first such failure
// stops the command as the signal would, cleanly, with its exit code.
// Later output is dropped.
func pipeWriter(f *os.File, stop func()) io.Writer {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return f
	}
	return &brokenPipeWriter{f: os.NewFile(uintptr(fd), f.Name()), stop: stop}
}

type brokenPipeWriter struct {
	f      *os.File
	stop   func()
	mu     sync.Mutex
	broken bool
}

// Fd lets the progress output tell a terminal.
func (w *brokenPipeWriter) Fd() uintptr { return w.f.Fd() }

func (w *brokenPipeWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken {
		return len(p), nil
	}
	n, err := w.f.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		w.broken = true
		w.stop()
		return len(p), nil
	}
	return n, err
}
