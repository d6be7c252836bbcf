package engine

import (
	"net"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// TestListenRefusesWildcard: a listener on 0.0.0.0 or :: would also serve
// interfaces cnbench did not assign, so the engine refuses both.
func TestListenRefusesWildcard(t *testing.T) {
	ctx := testContext(t)
	server := startEngine(t)
	for _, addr := range []string{"0.0.0.0", "::"} {
		_, err := server.Listen(ctx, addr, 0)
		if err == nil || !strings.Contains(err.Error(), "wildcard") {
			t.Errorf("listen on %s: %v, want a refusal of the wildcard", addr, err)
		}
	}
	if _, err := server.Listen(ctx, "127.0.0.1", 0); err != nil {
		t.Errorf("listen on 127.0.0.1 after the refusals: %v", err)
	}
}

// TestSilentPeersDoNotHoldUpTheListener: connections that never send a
// header, more of them than the listener has accepting threads, must not
// keep a tcp_crr flow's connections waiting behind them, nor the engine
// from stopping.
func TestSilentPeersDoNotHoldUpTheListener(t *testing.T) {
	ctx := testContext(t)
	server, client := startEngine(t), startEngine(t)
	target := listenLoopback(t, server, SocketOptions{})
	for range usableCPUs() + 1 {
		conn, err := net.Dial("tcp", target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
	}
	run, err := client.Run(ctx, RunSpec{
		Workload: WorkloadTCPCRR, Target: target,
		Session: 15, Flows: 1, RequestSize: 64, ResponseSize: 64, DurationMS: 400,
	})
	if err != nil {
		t.Fatal(err)
	}
	if run.Transactions < 10 {
		t.Fatalf("%d connections in 400 ms beside silent peers", run.Transactions)
	}
	h, err := hdrhistogram.Decode(run.LatencyHDR)
	if err != nil {
		t.Fatal(err)
	}
	// The first waits for a silent peer's patience at most.
	if slowest := time.Duration(h.Max()); slowest > headerPatience+time.Second {
		t.Errorf("slowest connection took %v beside silent peers", slowest)
	}
	t.Logf("%d connections, slowest %v", run.Transactions, time.Duration(h.Max()))
}
