package stopsignal

import (
	"syscall"
	"testing"
)

func TestErrorNamesTheSignalAndItsShellCode(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		text string
		code int
	}{
		{syscall.SIGINT, "interrupted by SIGINT", 130},
		{syscall.SIGHUP, "interrupted by SIGHUP", 129},
		{syscall.SIGTERM, "interrupted by SIGTERM", 143},
		{syscall.SIGPIPE, "interrupted by SIGPIPE", 141},
	} {
		e := Error{c.sig}
		if e.Error() != c.text || e.ExitCode() != c.code {
			t.Errorf("%d: %q, %d; want %q, %d", c.sig, e.Error(), e.ExitCode(), c.text, c.code)
		}
	}
}
