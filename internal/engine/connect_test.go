package engine

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// established counts the loopback TCP sockets in state ESTABLISHED with
// port on either end, from the kernel's own table.
func established(t *testing.T, port int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skipf("no /proc/net/tcp: %v", err)
	}
	hex := fmt.Sprintf(":%04X", port)
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && f[3] == "01" && (strings.HasSuffix(f[1], hex) || strings.HasSuffix(f[2], hex)) {
			n++
		}
	}
	return n
}

// settle waits up to 2 s for the count of established sockets to become
// want, as closes reach the peer, and returns the last count.
func settle(t *testing.T, port, want int) int {
	deadline := time.Now().Add(2 * time.Second)
	for established(t, port) != want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return established(t, port)
}

// TestConnectAheadReadiesTheRun connects a run's flows ahead, finds them
// in the kernel's table before the run, runs them, and refuses to start
// them for a run they were not readied for; a second connect drops the
// first, and quitting drops what was never started.
func TestConnectAheadReadiesTheRun(t *testing.T) {
	ctx := testContext(t)
	server, client := startEngine(t), startEngine(t)
	port, err := server.Listen(ctx, "127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	spec := RunSpec{Workload: WorkloadTCPStream, Target: fmt.Sprintf("127.0.0.1:%d", port), Session: 7,
		Flows: 8, MsgSize: 64 << 10, DurationMS: 300}
	if err := client.Connect(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if n := established(t, port); n != 2*spec.Flows {
		t.Fatalf("%d established sockets after connecting %d flows ahead, want %d", n, spec.Flows, 2*spec.Flows)
	}
	began := time.Now()
	run, got := runAndCollect(t, ctx, client, server, spec)
	if got.Flows != spec.Flows || got.ReceivedBytes != run.SentBytes || run.SentBytes == 0 {
		t.Errorf("readied run: %d flows, received %d of %d bytes sent", got.Flows, got.ReceivedBytes, run.SentBytes)
	}
	t.Logf("readied run of %d flows took %v, sent %d bytes", spec.Flows, time.Since(began), run.SentBytes)

	spec.Session = 8
	if err := client.Connect(ctx, spec); err != nil {
		t.Fatal(err)
	}
	other := spec
	other.MsgSize = 1 << 10
	if _, err := client.Run(ctx, other); err == nil || !strings.Contains(err.Error(), "connected ahead for another run") {
		t.Errorf("a run unlike the one readied for its session: %v", err)
	}
	if n := settle(t, port, 0); n != 0 {
		t.Errorf("%d sockets still established after the readied run was refused", n)
	}

	spec.Session = 9
	if err := client.Connect(ctx, spec); err != nil {
		t.Fatal(err)
	}
	spec.Session = 10
	if err := client.Connect(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if n := settle(t, port, 2*spec.Flows); n != 2*spec.Flows {
		t.Errorf("%d established sockets after a second connect ahead, want its %d alone", n, 2*spec.Flows)
	}
	// The cleanup's quit must return with session 10's flows never started.
}
