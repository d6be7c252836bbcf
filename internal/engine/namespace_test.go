package engine

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"

	"cnbench/internal/netns"
	"cnbench/internal/testutil"
	"cnbench/internal/testutil/nstest"
)

// sentOn reads the bytes link name in ns has sent.
func sentOn(t *testing.T, ns *netns.NS, name string) uint64 {
	t.Helper()
	h, err := netlink.NewHandleAt(ns.Handle())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	l, err := h.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().Statistics.TxBytes
}

// establishedIn counts the TCP connections to port in state ESTABLISHED
// in ns, from the kernel's table as a thread inside ns sees it.
func establishedIn(t *testing.T, ns *netns.NS, port int) int {
	t.Helper()
	var table []byte
	if err := ns.Do(func() (err error) {
		table, err = os.ReadFile("/proc/thread-self/net/tcp")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	remote := fmt.Sprintf(":%04X", port)
	n := 0
	for _, line := range strings.Split(string(table), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 3 && f[3] == "01" && strings.HasSuffix(f[2], remote) {
			n++
		}
	}
	return n
}

// TestOneEngineServesOtherNamespaces has one engine, running in the test's
// own namespace, listen in one namespace of a veth pair and send from the
// other, by naming their files: the listener's address exists only in its
// namespace, and the bytes received cross the pair's link. Runs connected
// ahead for two namespaces stay readied side by side.
func TestOneEngineServesOtherNamespaces(t *testing.T) {
	testutil.RequireRoot(t)
	a, b := nstest.VethPair(t)
	ctx := testContext(t)
	e := startEngine(t)
	if _, err := e.Listen(ctx, "198.18.200.2", 0); err == nil {
		t.Fatal("listened on an address of another namespace without naming it")
	}
	port, err := e.ListenIn(ctx, b.Path(), "198.18.200.2", 0, SocketOptions{})
	if err != nil {
		t.Fatal(err)
	}
	target := fmt.Sprintf("198.18.200.2:%d", port)

	t.Run("tcp_stream", func(t *testing.T) {
		before := sentOn(t, a, "v0")
		spec := RunSpec{Workload: WorkloadTCPStream, Target: target, Session: 101, Flows: 4, MsgSize: 64 << 10, DurationMS: 300, Netns: a.Path()}
		run, got := runAndCollect(t, ctx, e, e, spec)
		crossed := sentOn(t, a, "v0") - before
		if run.SentBytes == 0 || got.ReceivedBytes != run.SentBytes || crossed < uint64(got.ReceivedBytes) {
			t.Errorf("sent %d, received %d bytes; %d crossed v0", run.SentBytes, got.ReceivedBytes, crossed)
		}
	})
	t.Run("udp_stream", func(t *testing.T) {
		spec := RunSpec{Workload: WorkloadUDPStream, Target: target, Session: 102, Flows: 2, MsgSize: 1200, DurationMS: 200, RateBPS: 50e6, Netns: a.Path()}
		run, got := runAndCollect(t, ctx, e, e, spec)
		if run.SentPackets == 0 || got.PeerSent != run.SentPackets || got.Packets == 0 {
			t.Errorf("sent %d datagrams, listener heard of %d and received %d", run.SentPackets, got.PeerSent, got.Packets)
		}
	})
	t.Run("ping", func(t *testing.T) {
		run, err := e.Run(ctx, RunSpec{Workload: WorkloadPing, Target: "198.18.200.2", Session: 103, Flows: 1, MsgSize: 56, Count: 5, IntervalUS: 10_000, DurationMS: 1000, Netns: a.Path()})
		if err != nil {
			t.Fatal(err)
		}
		if run.Transactions != 5 || run.RTT == nil {
			t.Errorf("%d of 5 echoes answered", run.Transactions)
		}
	})
	t.Run("connected ahead for three endpoints", func(t *testing.T) {
		// Two endpoints named in one namespace, as the host mode's share
		// their host's, and one in the other.
		specs := []RunSpec{
			{Workload: WorkloadTCPRR, Target: target, Session: 104, Flows: 2, RequestSize: 1, ResponseSize: 1, DurationMS: 200, Netns: a.Path(), Endpoint: "c1"},
			{Workload: WorkloadTCPRR, Target: target, Session: 105, Flows: 2, RequestSize: 1, ResponseSize: 1, DurationMS: 200, Netns: a.Path(), Endpoint: "c2"},
			{Workload: WorkloadTCPRR, Target: target, Session: 109, Flows: 2, RequestSize: 1, ResponseSize: 1, DurationMS: 200, Netns: b.Path()},
		}
		for _, s := range specs {
			if err := e.Connect(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		// Both of a's endpoints keep their flows connected: a second
		// connect for the same endpoint would have closed the first's.
		if n := establishedIn(t, a, port); n != 4 {
			t.Errorf("%d connections from namespace a after readying two endpoints' two flows each, want 4", n)
		}
		var wg sync.WaitGroup
		runs := make([]*RunResult, len(specs))
		errs := make([]error, len(specs))
		for i, s := range specs {
			wg.Go(func() { runs[i], errs[i] = e.Run(ctx, s) })
		}
		wg.Wait()
		for i, s := range specs {
			if errs[i] != nil {
				t.Fatalf("run from %s: %v", s.Netns, errs[i])
			}
			if runs[i].Transactions == 0 {
				t.Errorf("run from %s made no transactions", s.Netns)
			}

		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			spec RunSpec
			want string
		}{
			{RunSpec{Workload: WorkloadTCPStream, Target: target, Session: 106, Flows: 1, MsgSize: 1024, DurationMS: 100, Netns: "/etc/hostname"}, "enter netns /etc/hostname"},
			{RunSpec{Workload: WorkloadTCPStream, Target: target, Session: 107, Flows: 1, MsgSize: 1024, DurationMS: 100, Netns: "run/netns/x"}, "not a clean absolute path"},
			{RunSpec{Workload: WorkloadTCPCRR, Target: target, Session: 108, Flows: 1, RequestSize: 1, ResponseSize: 1, DurationMS: 100, Netns: a.Path()}, "field netns does not apply"},
		} {
			if _, err := e.Run(ctx, tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run with netns %q: %v, want %q", tc.spec.Netns, err, tc.want)
			}
		}
	})
}
