package benchkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"cnbench/internal/stopsignal"
)

// SignalContext is cancelled by the first SIGINT, SIGTERM or SIGHUP, which
// it remembers for Exit. A second signal ends the process at once, as the
// signal's default does; `cnbench cleanup` removes what that leaves.
func SignalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s, ok := (<-sigs).(syscall.Signal)
		signal.Stop(sigs)
		if ok {
			cancel(stopsignal.Error{Signal: s})
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel(nil)
	}
}

// Exit ends a bench as cnbench's commands end: 0 without an error, 128
// plus the signal's number when a signal stopped it (130 for Ctrl-C),
// else 1, with the error printed under the bench's name.
func Exit(ctx context.Context, name string, err error) {
	var s stopsignal.Error
	switch {
	case err == nil:
		os.Exit(0)
	case errors.As(context.Cause(ctx), &s):
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, s)
		os.Exit(s.ExitCode())
	default:
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
