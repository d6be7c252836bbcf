package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// startEngine runs Serve in-process behind a pair of pipes, as the runner
// would run it behind a child process's stdin and stdout.
func startEngine(t *testing.T) *Client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := Serve(context.Background(), inR, outW)
		outW.Close()
		served <- err
	}()
	c := NewClient(inW, outR)
	t.Cleanup(func() {
		if err := c.Quit(); err != nil {
			t.Errorf("quit: %v", err)
		}
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("serve did not return after quit")
		}
	})
	return c
}

// runAndCollect runs spec from client and collects its session from
// server, which may be the same engine.
func runAndCollect(t *testing.T, ctx context.Context, client, server *Client, spec RunSpec) (*RunResult, *SessionResult) {
	t.Helper()
	run, err := client.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := server.Collect(ctx, spec.Session, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return run, got
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestTCPStream(t *testing.T) {
	for _, tc := range []struct {
		flows    int
		duration time.Duration
	}{
		{1, 1100 * time.Millisecond},
		{4, 600 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("flows=%d", tc.flows), func(t *testing.T) {
			ctx := testContext(t)
			server, client := startEngine(t), startEngine(t)
			port, err := server.Listen(ctx, "127.0.0.1", 0)
			if err != nil {
				t.Fatal(err)
			}
			const session = 42
			run, err := client.Run(ctx, RunSpec{
				Workload:   WorkloadTCPStream,
				Target:     fmt.Sprintf("127.0.0.1:%d", port),
				Session:    session,
				Flows:      tc.flows,
				MsgSize:    128 << 10,
				DurationMS: tc.duration.Milliseconds(),
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := server.Collect(ctx, session, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if run.SentBytes <= 0 || got.ReceivedBytes != run.SentBytes {
				t.Errorf("received %d bytes, sent %d", got.ReceivedBytes, run.SentBytes)
			}
			if got.Flows != tc.flows {
				t.Errorf("collect saw %d flows, want %d", got.Flows, tc.flows)
			}
			if got.Elapsed <= 0 || got.LastByte-got.FirstByte != got.Elapsed {
				t.Errorf("elapsed %v, first byte %v, last byte %v", got.Elapsed, got.FirstByte, got.LastByte)
			}
			if run.Elapsed < tc.duration {
				t.Errorf("run elapsed %v, shorter than %v", run.Elapsed, tc.duration)
			}
			bps := float64(got.ReceivedBytes) * 8 / got.Elapsed.Seconds()
			if bps <= 0 {
				t.Errorf("throughput %v bit/s", bps)
			}
			t.Logf("%.2f Gbit/s, %d retransmits (known %v)", bps/1e9, run.Retransmits, run.RetransmitsKnown)

			var sum int64
			wantIntervals := int((got.Elapsed + time.Second - 1) / time.Second)
			if len(got.Intervals) != wantIntervals {
				t.Errorf("%d intervals for %v, want %d", len(got.Intervals), got.Elapsed, wantIntervals)
			}
			for i, iv := range got.Intervals {
				if iv.StartMS != int64(i)*1000 || iv.EndMS <= iv.StartMS || iv.EndMS > iv.StartMS+1000 {
					t.Errorf("interval %d spans %d..%d ms", i, iv.StartMS, iv.EndMS)
				}
				sum += iv.Bytes
			}
			if sum != got.ReceivedBytes {
				t.Errorf("intervals sum to %d bytes, received %d", sum, got.ReceivedBytes)
			}
			// Every flow has its own count, and they add up to the
			// session's: none is lost or counted twice.
			if len(got.FlowBytes) != tc.flows {
				t.Errorf("%d per-flow counts for %d flows", len(got.FlowBytes), tc.flows)
			}
			var flowSum int64
			for i, b := range got.FlowBytes {
				if b <= 0 {
					t.Errorf("flow %d received %d bytes", i, b)
				}
				flowSum += b
			}
			if flowSum != got.ReceivedBytes {
				t.Errorf("flows received %d bytes together, the session %d", flowSum, got.ReceivedBytes)
			}

			if _, err := server.Collect(ctx, session, 50*time.Millisecond); err == nil {
				t.Error("a collected session was reported again")
			}
		})
	}
}

func TestTCPRR(t *testing.T) {
	ctx := testContext(t)
	server, client := startEngine(t), startEngine(t)
	port, err := server.Listen(ctx, "127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	spec := RunSpec{
		Workload:     WorkloadTCPRR,
		Target:       fmt.Sprintf("127.0.0.1:%d", port),
		Session:      7,
		Flows:        2,
		RequestSize:  64,
		ResponseSize: 300,
		DurationMS:   500,
	}
	run, got := runAndCollect(t, ctx, client, server, spec)
	if run.Transactions <= 0 {
		t.Fatalf("%d transactions", run.Transactions)
	}
	if got.Transactions != run.Transactions {
		t.Errorf("server served %d transactions, client completed %d", got.Transactions, run.Transactions)
	}
	if want := run.Transactions * int64(spec.RequestSize); run.SentBytes != want || got.ReceivedBytes != want {
		t.Errorf("sent %d and received %d request bytes, want %d", run.SentBytes, got.ReceivedBytes, want)
	}
	h, err := hdrhistogram.Decode(run.LatencyHDR)
	if err != nil {
		t.Fatalf("decode latency histogram: %v", err)
	}
	if h.TotalCount() != run.Transactions {
		t.Errorf("histogram holds %d values, want %d", h.TotalCount(), run.Transactions)
	}
	p50, p99 := h.ValueAtQuantile(50), h.ValueAtQuantile(99)
	if p50 <= 0 || p50 > p99 {
		t.Errorf("p50 %d ns, p99 %d ns", p50, p99)
	}
	t.Logf("%d transactions, mean %.1f us, p50 %.1f us, p99 %.1f us",
		run.Transactions, h.Mean()/1e3, float64(p50)/1e3, float64(p99)/1e3)
}

func TestRunAgainstNothingFails(t *testing.T) {
	ctx := testContext(t)
	client := startEngine(t)
	server := startEngine(t)
	port, err := server.Listen(ctx, "127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	server.Quit()
	_, err = client.Run(ctx, RunSpec{
		Workload: WorkloadTCPStream, Target: fmt.Sprintf("127.0.0.1:%d", port),
		Flows: 1, MsgSize: 1000, DurationMS: 100,
	})
	var remote *RemoteError
	if !errors.As(err, &remote) {
		t.Fatalf("run against a closed listener: got %v, want a remote error", err)
	}
}

func TestCollectTimesOut(t *testing.T) {
	ctx := testContext(t)
	server := startEngine(t)
	start := time.Now()
	if _, err := server.Collect(ctx, 99, 50*time.Millisecond); err == nil {
		t.Fatal("collect of a session that never ran succeeded")
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("collect took %v to time out", waited)
	}
}

func TestClientCancel(t *testing.T) {
	server := startEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := server.Collect(ctx, 1, time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want a deadline error", err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("canceled call returned after %v", waited)
	}
}

func TestMalformedRequests(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	responses := bufio.NewScanner(outR)
	send := func(line string) Response {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if !responses.Scan() {
			t.Fatalf("no response to %s: %v", line, responses.Err())
		}
		var resp Response
		if err := json.Unmarshal(responses.Bytes(), &resp); err != nil {
			t.Fatalf("bad response %q: %v", responses.Text(), err)
		}
		return resp
	}
	for _, tc := range []struct {
		line   string
		wantID uint64
	}{
		{`not json`, 0},
		{`{"op":"quit"}`, 0},
		{`{"id":1,"op":"dance"}`, 1},
		{`{"id":2}`, 2},
		{`{"id":3,"op":"listen","addr":"127.0.0.1"}`, 3},
		{`{"id":4,"op":"listen","addr":"localhost","port":0}`, 4},
		{`{"id":5,"op":"listen","addr":"127.0.0.1","port":70000}`, 5},
		{`{"id":6,"op":"listen","addr":"127.0.0.1","port":0,"colour":"red"}`, 6},
		{`{"id":7,"op":"run","workload":"tcp_stream","target":"127.0.0.1:9","session":1,"flows":100001,"msg_size":1,"duration_ms":1}`, 7},
		{`{"id":8,"op":"run","workload":"tcp_stream","target":"127.0.0.1:9","session":1,"flows":1,"msg_size":-5,"duration_ms":1}`, 8},
		{`{"id":9,"op":"run","workload":"tcp_stream","target":"127.0.0.1:9","session":1,"flows":1,"msg_size":67108865,"duration_ms":1}`, 9},
		{`{"id":10,"op":"run","workload":"tcp_rr","target":"127.0.0.1:9","session":1,"flows":1,"request_size":1,"duration_ms":1}`, 10},
		{`{"id":11,"op":"run","workload":"udp_stream","target":"127.0.0.1:9","session":1,"flows":1,"msg_size":1,"duration_ms":1}`, 11},
		{`{"id":17,"op":"run","workload":"udp_stream","target":"127.0.0.1:9","session":1,"flows":1,"msg_size":100,"duration_ms":1,"rate_bps":1,"rate_pps":1}`, 17},
		{`{"id":18,"op":"run","workload":"ping","target":"127.0.0.1:9","session":1,"flows":1,"msg_size":100,"duration_ms":1,"interval_us":1}`, 18},
		{`{"id":19,"op":"run","workload":"ping","target":"127.0.0.1","session":1,"flows":2,"msg_size":100,"duration_ms":1,"interval_us":1}`, 19},
		{`{"id":20,"op":"run","workload":"tcp_stream","target":"127.0.0.1:9","session":1,"flows":1,"msg_size":1,"duration_ms":1,"mss":10}`, 20},
		{`{"id":21,"op":"listen","addr":"127.0.0.1","port":0,"cc":"a b"}`, 21},
		{`{"id":22,"op":"run","workload":"udp_rr","target":"127.0.0.1:9","session":1,"flows":1,"request_size":70000,"response_size":64,"duration_ms":1}`, 22},
		{`{"id":12,"op":"run","workload":"tcp_stream","target":"nowhere","session":1,"flows":1,"msg_size":1,"duration_ms":1}`, 12},
		{`{"id":13,"op":"collect","session":1}`, 13},
		{`{"id":14,"op":"collect","session":1,"timeout_ms":1} {}`, 14},
		{`{"id":15,"op":"quit","session":1}`, 15},
		{`{"id":-1,"op":"quit"}`, 0},
		{`{"id":16,"op":"run","workload":"tcp_stream","target":"127.0.0.1:9","session":1,"flows":1.5,"msg_size":1,"duration_ms":1}`, 16},
	} {
		resp := send(tc.line)
		if resp.OK || resp.Error == "" || resp.ID != tc.wantID {
			t.Errorf("%s: got %+v, want an error for id %d", tc.line, resp, tc.wantID)
		}
	}
	if resp := send(`{"id":100,"op":"quit"}`); !resp.OK || resp.ID != 100 {
		t.Errorf("quit: got %+v", resp)
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}

func TestServeReturnsAtEndOfInput(t *testing.T) {
	ctx := testContext(t)
	server := startEngine(t)
	port, err := server.Listen(ctx, "127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- Serve(context.Background(), inR, outW) }()
	go io.Copy(io.Discard, outR)
	// A long run in flight must be aborted, not waited for.
	run := Request{ID: 1, Op: OpRun, RunSpec: RunSpec{
		Workload: WorkloadTCPStream, Target: fmt.Sprintf("127.0.0.1:%d", port),
		Session: 3, Flows: 2, MsgSize: 64 << 10, DurationMS: 60_000,
	}}
	line, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inW.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	inW.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve returned %v at end of input, want nil", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("serve did not return at end of input")
	}
	outW.Close()
	// The aborted flows closed, so the listener side has the session.
	if _, err := server.Collect(ctx, 3, 5*time.Second); err != nil {
		t.Errorf("collect after the client engine stopped: %v", err)
	}
}

func TestEngineKeepsASparePOnOneCPU(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	keepASpareP()
	if n := runtime.GOMAXPROCS(0); n != 2 {
		t.Errorf("GOMAXPROCS %d after keepASpareP on one P, want 2", n)
	}
	runtime.GOMAXPROCS(3)
	keepASpareP()
	if n := runtime.GOMAXPROCS(0); n != 3 {
		t.Errorf("GOMAXPROCS %d, want the 3 it had", n)
	}
}
