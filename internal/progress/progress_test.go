package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"cnbench/internal/model"
)

func progressCases() []model.Case {
	p := model.Params{Samples: 2, DurationMS: 1000}
	return []model.Case{
		{Key: "host/chc/tcp_stream", Workload: "tcp_stream", Params: p},
		{Key: "bridge/chc/tcp_stream", Workload: "tcp_stream", Params: p},
	}
}

// drive walks a progress through a run of two cases, the second skipped.
func drive(p *Progress, cases []model.Case) {
	p.Printf("run 1: scenario %q, %d cases", "x", len(cases))
	p.StartCase(&cases[0])
	for i := range 2 {
		p.Sample(&cases[0], i)
		p.SampleDone(&cases[0], model.Sample{Index: i, Values: map[string]float64{model.ThroughputBPS: 9.5e9}})
	}
	p.EndCase(&cases[0], model.StatusOK, "")
	p.StartCase(&cases[1])
	p.EndCase(&cases[1], model.StatusSkipped, "bridge: not available")
	p.Printf("run 1 done")
}

func TestProgressPlainLines(t *testing.T) {
	var b bytes.Buffer
	cases := progressCases()
	drive(New(&b, cases), cases)
	out := b.String()
	if strings.ContainsAny(out, "\r\x1b") {
		t.Errorf("plain output holds terminal controls: %q", out)
	}
	for _, want := range []string{"[1/2] host/chc/tcp_stream (eta ", "[1/2]   sample 2/2", "[1/2]     9.50 Gbit/s",
		"[2/2]   skipped: bridge: not available", "run 1 done"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestProgressNamesTheEngineOfCasesInTurns(t *testing.T) {
	var b bytes.Buffer
	cases := progressCases()
	cases[0].Engine, cases[1].Engine = "native", "iperf3"
	p := New(&b, cases)
	p.StartCases([]*model.Case{&cases[0], &cases[1]})
	for _, c := range []*model.Case{&cases[0], &cases[1]} {
		p.Sample(c, 0)
		p.SampleDone(c, model.Sample{Index: 0, Values: map[string]float64{model.ThroughputBPS: 9.5e9}})
	}
	out := b.String()
	for _, want := range []string{"[1/2]   native sample 1/2", "[1/2]     native 9.50 Gbit/s", "[1/2]   iperf3 sample 1/2", "[1/2]     iperf3 9.50 Gbit/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A case on its own needs no name: its key above says it.
	b.Reset()
	p.StartCase(&cases[0])
	p.Sample(&cases[0], 1)
	if out := b.String(); strings.Contains(out, "native sample") {
		t.Errorf("a lone case's sample line names its engine:\n%s", out)
	}
}

func TestProgressStatusLine(t *testing.T) {
	var b bytes.Buffer
	cases := progressCases()
	p := New(&b, cases)
	p.live = true // a terminal, as far as the test is concerned
	drive(p, cases)
	out := b.String()
	if !strings.Contains(out, "\r\x1b[K[1/2] host/chc/tcp_stream  sample 2/2: 9.50 Gbit/s") {
		t.Errorf("no status line for the sample:\n%q", out)
	}
	// Finished cases stay on screen, one line each.
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if i := strings.LastIndex(l, "\r\x1b[K"); i >= 0 {
			l = l[i+len("\r\x1b[K"):]
		}
		lines = append(lines, l)
	}
	want := []string{`run 1: scenario "x", 2 cases`, "[1/2] host/chc/tcp_stream  ok, last sample 9.50 Gbit/s (",
		"[2/2] bridge/chc/tcp_stream  skipped: bridge: not available (", "run 1 done", ""}
	if len(lines) != len(want) {
		t.Fatalf("permanent lines = %q, want %d", lines, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d = %q, want it to start %q", i, lines[i], want[i])
		}
	}
	if p.ticker != nil {
		t.Error("ticker still running after the run")
	}
}

func TestProgressTicksDuringACase(t *testing.T) {
	var b syncBuffer
	cases := progressCases()
	p := New(&b, cases)
	p.live = true
	p.StartCase(&cases[0])
	time.Sleep(2500 * time.Millisecond)
	p.EndCase(&cases[0], model.StatusOK, "")
	if n := strings.Count(b.String(), "[1/2] host/chc/tcp_stream  setting up"); n < 3 {
		t.Errorf("status line drawn %d times in 2.5 s, want the first and one a second", n)
	}
}

func TestProgressSilentWithoutWriter(t *testing.T) {
	cases := progressCases()
	drive(New(nil, cases), cases) // must not panic
	var p *Progress
	drive(p, cases)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSampleResultSpeaksEachWorkloadsUnit(t *testing.T) {
	for _, tc := range []struct {
		workload string
		values   map[string]float64
		want     string
	}{
		{"tcp_stream", map[string]float64{model.ThroughputBPS: 21.5e9}, "21.50 Gbit/s"},
		{"udp_max_rate", map[string]float64{model.MaxRateBPS: 2.58e9}, "2.58 Gbit/s"},
		{"ping", map[string]float64{model.RTTAvgUS: 54.2}, "rtt avg 54.2 us"},
		{"tcp_crr", map[string]float64{model.ConnectionsPerS: 9000, model.LatencyP99US: 300}, "9000 connections/s, p99 300.0 us"},
		{"udp_rr", map[string]float64{model.TransactionsPerS: 40000, model.LatencyP99US: 51.5}, "40000 tx/s, p99 51.5 us"},
	} {
		c := &model.Case{Workload: tc.workload}
		if got := sampleResult(c, model.Sample{Values: tc.values}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.workload, got, tc.want)
		}
	}
}
