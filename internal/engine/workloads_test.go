package engine

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"
)

func listenLoopback(t *testing.T, server *Client, o SocketOptions) string {
	t.Helper()
	port, err := server.ListenWith(testContext(t), "127.0.0.1", 0, o)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

func TestUDPStreamAtRate(t *testing.T) {
	ctx := testContext(t)
	server, client := startEngine(t), startEngine(t)
	// A buffer of a second's datagrams rides out the scheduling stalls of
	// a loaded machine; loss here would be the engine's, not the path's.
	spec := RunSpec{
		Workload: WorkloadUDPStream, Target: listenLoopback(t, server, SocketOptions{ReceiveBuffer: 16 << 20}),
		Session: 11, Flows: 1, MsgSize: 1000, DurationMS: 600, RateBPS: 80_000_000,
	}
	run, got := runAndCollect(t, ctx, client, server, spec)
	// 80 Mbit/s x 0.6 s of 1000-byte datagrams.
	want := 80e6 * 0.6 / 8000
	if f := float64(run.SentPackets); f < 0.9*want || f > 1.05*want {
		t.Errorf("sent %d datagrams at the offered rate, want about %.0f", run.SentPackets, want)
	}
	if got.PeerSent != run.SentPackets {
		t.Errorf("listener heard of %d datagrams sent, the client sent %d", got.PeerSent, run.SentPackets)
	}
	if got.Packets+got.PeerLost != got.PeerSent {
		t.Errorf("received %d + lost %d != sent %d", got.Packets, got.PeerLost, got.PeerSent)
	}
	// Paced far below what loopback carries: nothing may be lost.
	if got.PeerLost != 0 || got.ReceivedBytes != run.SentBytes {
		t.Errorf("lost %d datagrams; received %d of %d bytes", got.PeerLost, got.ReceivedBytes, run.SentBytes)
	}
	if got.JitterNS <= 0 || got.JitterNS > float64(50*time.Millisecond) {
		t.Errorf("jitter %.0f ns", got.JitterNS)
	}
	var packets int64
	for _, iv := range got.Intervals {
		packets += iv.Packets
	}
	if packets != got.Packets {
		t.Errorf("intervals hold %d datagrams, received %d", packets, got.Packets)
	}
	t.Logf("sent %d, received %d, out of order %d, jitter %.1f us", run.SentPackets, got.Packets, got.OutOfOrder, got.JitterNS/1e3)
}

func TestUDPStreamUnlimitedAccountsLoss(t *testing.T) {
	ctx := testContext(t)
	server, client := startEngine(t), startEngine(t)
	// A small receive buffer makes an unpaced sender overrun it.
	target := listenLoopback(t, server, SocketOptions{ReceiveBuffer: 4096})
	spec := RunSpec{Workload: WorkloadUDPStream, Target: target, Session: 12, Flows: 1, MsgSize: 1472, DurationMS: 400}
	run, got := runAndCollect(t, ctx, client, server, spec)
	if run.SentPackets == 0 || got.PeerSent != run.SentPackets || got.Packets+got.PeerLost != run.SentPackets {
		t.Errorf("sent %d, listener saw %d sent, %d received, %d lost", run.SentPackets, got.PeerSent, got.Packets, got.PeerLost)
	}
	t.Logf("sent %d, received %d, lost %d (%.1f%%)", run.SentPackets, got.Packets, got.PeerLost, 100*float64(got.PeerLost)/float64(run.SentPackets))
}

func TestUDPRR(t *testing.T) {
	ctx := testContext(t)
	server, client := startEngine(t), startEngine(t)
	spec := RunSpec{
		Workload: WorkloadUDPRR, Target: listenLoopback(t, server, SocketOptions{}),
		Session: 13, Flows: 2, RequestSize: 64, ResponseSize: 1200, DurationMS: 400,
	}
	run, got := runAndCollect(t, ctx, client, server, spec)
	if run.Transactions <= 0 || run.Transactions+run.Lost != run.SentPackets {
		t.Fatalf("%d transactions + %d lost, %d requests", run.Transactions, run.Lost, run.SentPackets)
	}
	if got.Transactions < run.Transactions || got.Packets != got.Transactions {
		t.Errorf("listener answered %d of %d requests; client completed %d", got.Transactions, got.Packets, run.Transactions)
	}
	checkHistogram(t, run.LatencyHDR, run.Transactions)
}

func TestTCPCRR(t *testing.T) {
	ctx := testContext(t)
	server, client := startEngine(t), startEngine(t)
	spec := RunSpec{
		Workload: WorkloadTCPCRR, Target: listenLoopback(t, server, SocketOptions{}),
		Session: 14, Flows: 2, RequestSize: 100, ResponseSize: 300 << 10, DurationMS: 400,
	}
	run, err := client.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if run.Transactions < 10 || run.SentBytes != run.Transactions*100 {
		t.Fatalf("%d connections, %d bytes sent", run.Transactions, run.SentBytes)
	}
	checkHistogram(t, run.LatencyHDR, run.Transactions)
	t.Logf("%.0f connections/s", float64(run.Transactions)/run.Elapsed.Seconds())
}

func checkHistogram(t *testing.T, encoded []byte, want int64) {
	t.Helper()
	h, err := hdrhistogram.Decode(encoded)
	if err != nil {
		t.Fatalf("decode latency histogram: %v", err)
	}
	if h.TotalCount() != want {
		t.Errorf("histogram holds %d values, want %d", h.TotalCount(), want)
	}
	if p50, p99 := h.ValueAtQuantile(50), h.ValueAtQuantile(99); p50 <= 0 || p50 > p99 {
		t.Errorf("p50 %d ns, p99 %d ns", p50, p99)
	}
}

// TestPing echoes over ICMP and ICMPv6 (::1), small and large.
func TestPing(t *testing.T) {
	for _, target := range []string{"127.0.0.1", "::1"} {
		for _, size := range []int{32, 32 << 10} {
			t.Run(fmt.Sprint(target, "/", size), func(t *testing.T) {
				testPing(t, target, size)
			})
		}
	}
}

func testPing(t *testing.T, target string, size int) {
	if target == "::1" {
		if c, err := net.ListenPacket("udp6", "[::1]:0"); err != nil {
			t.Skipf("no IPv6 loopback here: %v", err)
		} else {
			c.Close()
		}
	}
	client := startEngine(t)
	run, err := client.Run(testContext(t), RunSpec{
		Workload: WorkloadPing, Target: target, Flows: 1, MsgSize: size,
		Count: 20, IntervalUS: 2000, DurationMS: 5000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if run.SentPackets != 20 || run.Transactions != 20 || run.Lost != 0 {
		t.Fatalf("sent %d, answered %d, lost %d", run.SentPackets, run.Transactions, run.Lost)
	}
	r := run.RTT
	if r == nil || r.Min <= 0 || r.Min > r.Avg || r.Avg > r.Max || r.Mdev < 0 {
		t.Fatalf("rtt %+v", r)
	}
	// 20 echoes 2 ms apart: the run takes about 38 ms, not the duration.
	if run.Elapsed < 30*time.Millisecond || run.Elapsed > time.Second {
		t.Errorf("elapsed %v", run.Elapsed)
	}
	checkHistogram(t, run.LatencyHDR, 20)
	t.Logf("rtt min/avg/max/mdev %.1f/%.1f/%.1f/%.1f us", r.Min/1e3, r.Avg/1e3, r.Max/1e3, r.Mdev/1e3)
}

func TestPingStopsAtDuration(t *testing.T) {
	client := startEngine(t)
	run, err := client.Run(testContext(t), RunSpec{
		Workload: WorkloadPing, Target: "127.0.0.1", Flows: 1, MsgSize: 16, Count: 3, IntervalUS: 1000, DurationMS: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	// A 1 ms duration cuts the count short: only the first echo goes.
	if run.SentPackets != 1 || run.Transactions != 1 {
		t.Errorf("sent %d, answered %d", run.SentPackets, run.Transactions)
	}
}

// TestSocketOptions checks that the knobs reach the kernel: a connection
// made with them reports them back.
func TestSocketOptions(t *testing.T) {
	o := SocketOptions{MSS: 536, SendBuffer: 64 << 10, ReceiveBuffer: 96 << 10, CC: "reno"}
	ln, err := (&net.ListenConfig{Control: controlOptions(o)}).Listen(testContext(t), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := (&net.Dialer{Control: controlOptions(o)}).Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw, _ := conn.(*net.TCPConn).SyscallConn()
	raw.Control(func(fd uintptr) {
		if mss, _ := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG); mss > 536 {
			t.Errorf("mss %d, want at most 536", mss)
		}
		if cc, _ := unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION); strings.TrimRight(cc, "\x00") != "reno" {
			t.Errorf("congestion control %q", cc)
		}
		// The kernel doubles what is asked for.
		if buf, _ := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF); buf != 2*o.SendBuffer {
			t.Errorf("send buffer %d, want %d", buf, 2*o.SendBuffer)
		}
	})
	// Beyond net.core.rmem_max, root gets what it asks for.
	big := SocketOptions{ReceiveBuffer: 64 << 20}
	raw.Control(func(fd uintptr) {
		if err := applyOptions(int(fd), big, true); err != nil {
			t.Fatal(err)
		}
		if buf, _ := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF); buf != 2*big.ReceiveBuffer {
			t.Errorf("receive buffer %d, want %d", buf, 2*big.ReceiveBuffer)
		}
	})
	raw.Control(func(fd uintptr) {
		if buf, _ := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF); buf != 2*o.SendBuffer {
			t.Errorf("send buffer %d, want %d", buf, 2*o.SendBuffer)
		}
	})

	server, client := startEngine(t), startEngine(t)
	_, err = client.Run(testContext(t), RunSpec{
		Workload: WorkloadTCPStream, Target: listenLoopback(t, server, SocketOptions{}),
		Session: 15, Flows: 1, MsgSize: 1000, DurationMS: 50, SocketOptions: SocketOptions{CC: "no_such_cc"},
	})
	if err == nil || !strings.Contains(err.Error(), "congestion control") {
		t.Errorf("a run with an unknown congestion control: got %v", err)
	}
}

// A stream of more flows than CPUs is read by the receive pool: every
// byte must arrive, tiny writes and a receive buffer fixed small among
// them, and the last bytes at once when the stream ends, not when a
// silent flow times out.
func TestPooledStreamBytesAllArrive(t *testing.T) {
	ctx := testContext(t)
	server, client := startEngine(t), startEngine(t)
	for i, c := range []struct {
		flows, msgSize int
		o              SocketOptions
	}{
		{usableCPUs() + 3, 100, SocketOptions{}},
		{usableCPUs() + 3, 3000, SocketOptions{ReceiveBuffer: 8192}},
	} {
		spec := RunSpec{
			Workload: WorkloadTCPStream, Target: listenLoopback(t, server, c.o),
			Session: uint64(40 + i), Flows: c.flows, MsgSize: c.msgSize, DurationMS: 300,
		}
		run, err := client.Run(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got, err := server.Collect(ctx, spec.Session, 5*time.Second)
		if err != nil {
			t.Fatalf("%d flows of %d-byte writes: %v", c.flows, c.msgSize, err)
		}
		if got.ReceivedBytes != run.SentBytes {
			t.Errorf("%d flows of %d-byte writes, %+v: received %d of %d bytes", c.flows, c.msgSize, c.o, got.ReceivedBytes, run.SentBytes)
		}
		if waited := time.Since(start); waited > time.Second {
			t.Errorf("%d flows of %d-byte writes: the last bytes took %v to be read after the run", c.flows, c.msgSize, waited)
		}
	}
}

// TestIdleEngineSleeps runs a pooled stream and a round trip between two
// engines, which then stay up with nothing to do, as they do while
// another engine or mode takes its turn in a paired comparison: nothing
// of theirs may wake in that time, or it would run beside what is being
// measured.
func TestIdleEngineSleeps(t *testing.T) {
	ctx := testContext(t)
	server, client := startEngine(t), startEngine(t)
	target := listenLoopback(t, server, SocketOptions{})
	for i, spec := range []RunSpec{
		{Workload: WorkloadTCPStream, Flows: usableCPUs() + 3, MsgSize: 16384},
		{Workload: WorkloadTCPRR, Flows: 1, RequestSize: 64, ResponseSize: 64},
	} {
		spec.Target, spec.Session, spec.DurationMS = target, uint64(50+i), 300
		runAndCollect(t, ctx, client, server, spec)
	}
	if n := quietestSwitches(t); n > 60 {
		t.Errorf("two idle engines switched %d times in their quietest 0.2 s", n)
	}
}
