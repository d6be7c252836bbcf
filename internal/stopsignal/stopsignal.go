// Package stopsignal is how cnbench's programs say that a signal stopped
// them: the error a signal cancels their context with, and the exit code
// a shell gives a process killed by that signal.
package stopsignal

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Error is why a signal cancelled a program's context.
type Error struct{ Signal syscall.Signal }

func (e Error) Error() string { return "interrupted by " + unix.SignalName(e.Signal) }

// ExitCode is 128 plus the signal's number, as a shell reports a death by
// that signal (130 for Ctrl-C).
func (e Error) ExitCode() int { return 128 + int(e.Signal) }
