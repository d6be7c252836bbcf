package benchkit

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary play a bench: waiting for a signal, or
// failing on its own.
func TestMain(m *testing.M) {
	switch os.Getenv("BENCHKIT_TEST_ROLE") {
	case "wait":
		ctx, stop := SignalContext()
		os.Stdout.WriteString("ready\n")
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Second):
		}
		stop()
		Exit(ctx, "bench", ctx.Err())
	case "fail":
		ctx, stop := SignalContext()
		stop()
		Exit(ctx, "bench", errors.New("2 of 24 cases failed"))
	case "succeed":
		ctx, stop := SignalContext()
		stop()
		Exit(ctx, "bench", nil)
	}
	os.Exit(m.Run())
}

// bench starts the test binary in a role and returns its exit code and
// what it printed on stderr, sending sig once it is ready.
func bench(t *testing.T, role string, sig syscall.Signal) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BENCHKIT_TEST_ROLE="+role)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if sig != 0 {
		line, _ := bufio.NewReader(out).ReadString('\n')
		if line != "ready\n" {
			t.Fatalf("the bench said %q before its signal", line)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

func TestBenchExitCodes(t *testing.T) {
	for _, c := range []struct {
		role   string
		sig    syscall.Signal
		code   int
		stderr string
	}{
		{"wait", syscall.SIGINT, 130, "bench: interrupted by SIGINT\n"},
		{"wait", syscall.SIGTERM, 143, "bench: interrupted by SIGTERM\n"},
		{"wait", syscall.SIGHUP, 129, "bench: interrupted by SIGHUP\n"},
		{"fail", 0, 1, "bench: 2 of 24 cases failed\n"},
		{"succeed", 0, 0, ""},
	} {
		code, stderr := bench(t, c.role, c.sig)
		if code != c.code || stderr != c.stderr {
			t.Errorf("%s, signal %d: exit %d with %q, want %d with %q", c.role, c.sig, code, stderr, c.code, c.stderr)
		}
	}
}
