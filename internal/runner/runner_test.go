package runner

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"cnbench/internal/agent/guest"
	"cnbench/internal/awake"
	"cnbench/internal/driver"
	"cnbench/internal/engine"
	"cnbench/internal/model"
	"cnbench/internal/modes"
	"cnbench/internal/netns"
	"cnbench/internal/pinning"
	"cnbench/internal/scenario"
	"cnbench/internal/store"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
	"cnbench/internal/workload"
)

// The test binary doubles as the engine: started with this variable set,
// it serves the control protocol instead of running tests.
const engineEnv = "CNBENCH_TEST_ENGINE"

func TestMain(m *testing.M) {
	// Booted as a guest's init, the test binary is the guest's agent, and
	// the agent starts it again as the guest's engine.
	if len(os.Args) > 1 && os.Args[1] == "guest-agent" {
		if err := guest.Main(); err != nil {
			os.Exit(1)
		}
	}
	if len(os.Args) > 2 && os.Args[1] == "awake" {
		if err := awake.Serve(os.Args[2], os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(engineEnv) == "1" || len(os.Args) > 1 && os.Args[1] == "engine" {
		if err := engine.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func newTestRunner(t *testing.T) (*Runner, *store.Store) {
	t.Helper()
	testutil.RequireRoot(t)
	st, err := store.Open(filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newTestRunnerOn(t, st)
}

// newTestRunnerOn is a runner on an open store, as a second process
// working on the same database would have.
func newTestRunnerOn(t *testing.T, st *store.Store) (*Runner, *store.Store) {
	t.Helper()
	r, err := New(st, Options{
		EngineCommand: []string{os.Args[0]},
		EngineEnv:     append(os.Environ(), engineEnv+"=1"),
		Progress:      testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close()
		left, _ := netns.List()
		for _, n := range left {
			if netns.TokenOf(n) == r.Token() {
				t.Errorf("namespace %s left behind", n)
			}
		}
	})
	return r, st
}

// runDoc parses a scenario, runs it to the end and loads what was stored.
func runDoc(t *testing.T, r *Runner, st *store.Store, name, doc string) *model.RunResult {
	t.Helper()
	spec, err := scenario.Parse(name, []byte(doc), vocab())
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.LoadRun(id)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

func vocab() scenario.Vocabulary {
	return scenario.Vocabulary{Modes: append(modes.Names(), modes.Patterns()...), Topologies: topo.Kinds, Workloads: workload.Names(), Engines: driver.Names()}
}

// TestEveryModeTopologyAndWorkload runs the whole core matrix with short
// samples and checks that every case measured plausible numbers.
func TestEveryModeTopologyAndWorkload(t *testing.T) {
	r, st := newTestRunner(t)
	res := runDoc(t, r, st, "matrix.yaml", `
name: matrix
duration: 300ms
warmup: 100ms
samples: 2
modes: [host, veth, bridge, macvlan, nat]
topologies: [chc, chhc]
workloads: [tcp_stream, tcp_rr]
`)
	if res.Run.Status != "done" {
		t.Errorf("run status %q, want done", res.Run.Status)
	}
	if len(res.Cases) != 20 {
		t.Fatalf("%d cases, want 20", len(res.Cases))
	}
	machine, err := pinning.ReadMachine()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cases {
		if c.Status == model.StatusSkipped {
			t.Logf("%s skipped: %s", c.Key, c.Reason)
			continue
		}
		if c.Status != model.StatusOK {
			t.Errorf("%s: %s %s", c.Key, c.Status, c.Reason)
			continue
		}
		if len(c.Samples) != 2 {
			t.Errorf("%s: %d samples, want 2", c.Key, len(c.Samples))
		}
		for _, s := range c.Samples {
			v := s.Values
			switch c.Workload {
			case "tcp_stream":
				if v[model.ThroughputBPS] < 1e6 {
					t.Errorf("%s: throughput %.0f bit/s", c.Key, v[model.ThroughputBPS])
				}
				if v[model.ReceivedBytes] > v[model.SentBytes] {
					t.Errorf("%s: received %.0f > sent %.0f", c.Key, v[model.ReceivedBytes], v[model.SentBytes])
				}
				// The engine's byte count against the kernel's own.
				if r := v[model.AppWireRatio]; r < 0.98 || r > 1.02 {
					t.Errorf("%s: received bytes / wire payload = %.4f, want within 2%% of 1", c.Key, r)
				}
			case "tcp_rr":
				if v[model.TransactionsPerS] < 100 {
					t.Errorf("%s: %.0f tx/s", c.Key, v[model.TransactionsPerS])
				}
				if !(v[model.LatencyP50US] > 0 && v[model.LatencyP50US] <= v[model.LatencyP99US] && v[model.LatencyP99US] <= v[model.LatencyP999US]) {
					t.Errorf("%s: percentiles out of order: %v", c.Key, v)
				}
				if len(s.Latency) == 0 {
					t.Errorf("%s: no latency histogram stored", c.Key)
				}
			}
			if v[model.CPUSenderPct] <= 0 || v[model.CPUReceiverPct] <= 0 {
				t.Errorf("%s: cpu sender %.1f%% receiver %.1f%%", c.Key, v[model.CPUSenderPct], v[model.CPUReceiverPct])
			}
			if steal, ok := v[model.CPUStealPct]; !ok || steal < 0 || steal > 100*float64(runtime.NumCPU()) {
				t.Errorf("%s: cpu steal %v (recorded %v)", c.Key, steal, ok)
			}
			checkCPUSeconds(t, c, s, machine, 300*time.Millisecond)
		}
	}
}

// checkCPUSeconds holds a sample's CPU figures to what the case could
// use and to each other. Each side's percentage is at most 100 per CPU
// it may run on: those of its placement, else every CPU of the machine.
// cpu_s_per_gb and cpu_us_per_tx spread the same CPU-seconds as the
// percentages, which are over the sample's time: per GB received, or per
// transaction at the sample's rate over the configured duration, which
// the engine's own time matches or exceeds a little.
func checkCPUSeconds(t *testing.T, c model.CaseResult, s model.Sample, m pinning.Machine, dur time.Duration) {
	t.Helper()
	v := s.Values
	for _, side := range []struct {
		metric, cpus string
	}{{model.CPUSenderPct, c.Params.SenderCPUs}, {model.CPUReceiverPct, c.Params.ReceiverCPUs}} {
		n := len(m)
		if side.cpus != "" {
			list, err := pinning.ParseList(side.cpus)
			if err != nil {
				t.Fatal(err)
			}
			n = len(list)
		}
		if v[side.metric] > 100*float64(n)*1.02 {
			t.Errorf("%s: %s %.1f%%, more than its %d CPUs have", c.Key, side.metric, v[side.metric], n)
		}
	}
	cores := (v[model.CPUSenderPct] + v[model.CPUReceiverPct]) / 100
	seconds := cores * s.Duration.Seconds()
	switch c.Workload {
	case "tcp_stream":
		want := seconds / (v[model.ReceivedBytes] / 1e9)
		if got := v[model.CPUSPerGB]; math.Abs(got-want) > 0.03*want {
			t.Errorf("%s: cpu_s_per_gb %.4f, want %.4f: %.1f%% of a core for %v over %.3f GB", c.Key, got, want, 100*cores, s.Duration, v[model.ReceivedBytes]/1e9)
		}
	case "tcp_rr":
		// Transactions at the rate: tx/s over the engine's time, which
		// lies between the configured duration and the sample's.
		most := seconds * 1e6 / (v[model.TransactionsPerS] * dur.Seconds())
		least := seconds * 1e6 / (v[model.TransactionsPerS] * max(dur, s.Duration).Seconds())
		if got := v[model.CPUUSPerTx]; got < 0.97*least || got > 1.03*most {
			t.Errorf("%s: cpu_us_per_tx %.2f, want %.2f to %.2f: %.1f%% of a core over %v at %.0f tx/s", c.Key, got, least, most, 100*cores, s.Duration, v[model.TransactionsPerS])
		}
	}
}

// TestInterruptKeepsSamples cancels a run during its second case: the
// samples already measured stay stored and the run is marked interrupted.
func TestInterruptKeepsSamples(t *testing.T) {
	r, st := newTestRunner(t)
	spec, err := scenario.Parse("two.yaml", []byte(`
name: two
duration: 300ms
warmup: 0s
samples: 2
modes: [bridge]
topologies: [chc, chhc]
workloads: [tcp_stream]
`), vocab())
	if err != nil {
		t.Fatal(err)
	}
	// Cancel as the second case's first sample starts, as Ctrl-C would.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.opts.Progress = cancelOn{testWriter{t}, "[2/2]   sample 1/2", cancel}
	r.opts.Order = OrderSequential
	id, err := r.Run(ctx, spec)
	if err == nil {
		t.Fatal("run finished despite cancellation; make the samples longer")
	}
	res, err := st.LoadRun(id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Status != "interrupted" {
		t.Errorf("run status %q, want interrupted", res.Run.Status)
	}
	if res.Cases[0].Status != model.StatusOK || len(res.Cases[0].Samples) != 2 {
		t.Errorf("first case %s with %d samples, want ok with 2", res.Cases[0].Status, len(res.Cases[0].Samples))
	}
	// The first case's samples ran their full 300 ms; the second case's
	// first sample was abandoned when the run was cancelled, not run to
	// its end and stored.
	for i, s := range res.Cases[0].Samples {
		if s.Duration < 300*time.Millisecond {
			t.Errorf("first case, sample %d: %v, shorter than the configured 300ms", i+1, s.Duration)
		}
	}
	if res.Cases[1].Status != model.StatusPending || len(res.Cases[1].Samples) != 0 {
		t.Errorf("second case %s with %d samples, want pending with none", res.Cases[1].Status, len(res.Cases[1].Samples))
	}
}

// cancelOn cancels a context when a progress line contains a marker.
type cancelOn struct {
	testWriter
	marker string
	cancel context.CancelFunc
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.marker) {
		c.cancel()
	}
	return c.testWriter.Write(p)
}

// TestExternalEnginesSideBySide runs the same cases with the native engine,
// iperf3 and sockperf through NAT, whose published ports every engine's
// server must be reached at; each engine measures what it can and skips
// the rest with a reason.
func TestExternalEnginesSideBySide(t *testing.T) {
	testutil.RequireTool(t, "iperf3")
	testutil.RequireTool(t, "sockperf")
	r, st := newTestRunner(t)
	res := runDoc(t, r, st, "engines.yaml", `
name: engines
duration: 1s
warmup: 0s
samples: 2
modes: [nat]
topologies: [chc]
workloads: [tcp_stream, tcp_rr]
engines: [native, iperf3, sockperf]
`)
	measured, senderCPU := map[string]float64{}, map[string]float64{}
	for _, c := range res.Cases {
		want := model.StatusOK
		if (c.Engine == "iperf3" && c.Workload != "tcp_stream") || (c.Engine == "sockperf" && c.Workload != "tcp_rr") {
			want = model.StatusSkipped
		}
		if c.Status != want {
			t.Errorf("%s: %s (%s), want %s", c.Key, c.Status, c.Reason, want)
			continue
		}
		if want == model.StatusSkipped {
			if !strings.Contains(c.Reason, "does not run") {
				t.Errorf("%s: skip reason %q does not say why", c.Key, c.Reason)
			}
			continue
		}
		v := c.Samples[0].Values
		key := c.Mode + "/" + c.Workload + "/" + c.Engine
		// The better of two samples: one stray outlier on a shared
		// machine says nothing about the engines.
		for _, s := range c.Samples {
			measured[key] = max(measured[key], s.Values[workload.PrimaryMetric(c.Workload)])
			senderCPU[key] = max(senderCPU[key], s.Values[model.CPUSenderPct])
		}
		if c.Workload == "tcp_rr" && !(v[model.LatencyP50US] > 0 && v[model.LatencyP99US] >= v[model.LatencyP50US]) {
			t.Errorf("%s: latency percentiles %v", c.Key, v)
		}
		if v[model.CPUSenderPct] <= 0 || v[model.CPUReceiverPct] <= 0 {
			t.Errorf("%s: no CPU accounted to the external tool: %v", c.Key, v)
		}
	}
	t.Logf("side by side: %v", measured)
	// The engines of one path took turns on it: A B, then B A.
	for _, m := range []string{"nat"} {
		for _, w := range []string{"tcp_stream", "tcp_rr"} {
			if got := turnOrder(res, m, w); len(got) != 4 || got[0] == got[1] || got[1] != got[2] || got[0] != got[3] {
				t.Errorf("%s %s: samples by time came from %v, want A B B A", m, w, got)
			}
		}
	}
	// Same path, same machine: engines agree within a factor of three even
	// on a busy machine; closer agreement is the bench's business.
	for _, m := range []string{"nat"} {
		for _, pair := range [][2]string{{"tcp_stream/native", "tcp_stream/iperf3"}, {"tcp_rr/native", "tcp_rr/sockperf"}} {
			a, b := measured[m+"/"+pair[0]], measured[m+"/"+pair[1]]
			if a <= 0 || b <= 0 || a/b > 3 || b/a > 3 {
				t.Errorf("%s: %s %.0f vs %s %.0f", m, pair[0], a, pair[1], b)
			}
		}
		// A ping-pong keeps its sender about as busy whichever engine
		// runs it. sockperf idles 2 s before its 1 s of traffic, which
		// must not dilute its CPU share to a third.
		a, b := senderCPU[m+"/tcp_rr/native"], senderCPU[m+"/tcp_rr/sockperf"]
		if a <= 0 || b <= 0 || a/b > 2 || b/a > 2 {
			t.Errorf("%s: tcp_rr sender CPU %.1f%% with native, %.1f%% with sockperf", m, a, b)
		}
	}
}

// turnOrder is the engine of each measured sample of a mode's workload,
// in the order the samples started.
func turnOrder(res *model.RunResult, mode, workload string) []string {
	type taken struct {
		at     time.Time
		engine string
	}
	var all []taken
	for _, c := range res.Cases {
		if c.Mode == mode && c.Workload == workload {
			for _, s := range c.Samples {
				all = append(all, taken{s.Started, c.Engine})
			}
		}
	}
	slices.SortFunc(all, func(a, b taken) int { return a.at.Compare(b.at) })
	var engines []string
	for _, x := range all {
		engines = append(engines, x.engine)
	}
	return engines
}

func TestShuffledOrderIsRepeatable(t *testing.T) {
	a, b := shuffle(50, 42, OrderShuffled), shuffle(50, 42, OrderShuffled)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("the same seed gave two orders")
	}
	if fmt.Sprint(a) == fmt.Sprint(shuffle(50, 43, OrderShuffled)) {
		t.Fatal("two seeds gave the same order")
	}
	seen := map[int]bool{}
	for _, i := range a {
		seen[i] = true
	}
	if len(seen) != 50 {
		t.Fatalf("shuffle lost cases: %v", a)
	}
	if got := shuffle(3, 42, OrderSequential); fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("sequential order %v", got)
	}
}

func TestEnoughSamples(t *testing.T) {
	fixed := model.Params{Samples: 3}
	if stop, _ := enoughSamples(fixed, []float64{1, 2}); stop {
		t.Error("stopped before the third of three samples")
	}
	if stop, why := enoughSamples(fixed, []float64{1, 2, 3}); !stop || why != "" {
		t.Errorf("after three of three: stop %v why %q", stop, why)
	}
	target := model.Params{Samples: 2, TargetCIPct: 1, MaxSamples: 6}
	tight := []float64{100, 100.1, 99.9}
	if stop, why := enoughSamples(target, tight); !stop || why != "target_ci" {
		t.Errorf("tight samples: stop %v why %q", stop, why)
	}
	loose := []float64{100, 150, 60, 120, 80}
	if stop, _ := enoughSamples(target, loose); stop {
		t.Error("stopped with a wide interval before the maximum")
	}
	if stop, why := enoughSamples(target, append(loose, 130)); !stop || why != "max_samples" {
		t.Errorf("at the maximum: stop %v why %q", stop, why)
	}
	// Left to a decision between engines: tight samples alone do not stop it.
	decided := model.Params{Samples: 2, MaxSamples: 4}
	if stop, _ := enoughSamples(decided, tight); stop {
		t.Error("a case waiting for a decision stopped at its own samples")
	}
	if stop, why := enoughSamples(decided, append(tight, 100)); !stop || why != "max_samples" {
		t.Errorf("waiting for a decision, at the maximum: stop %v why %q", stop, why)
	}
}

func TestDisturbedSamplesAreRetakenWithinBounds(t *testing.T) {
	stolen := func(pct float64) model.Sample {
		return model.Sample{Values: map[string]float64{model.CPUStealPct: pct}}
	}
	p := model.Params{Samples: 3, MaxStealPct: 2}
	retaken := 0
	if disturbed(p, retaken, stolen(2)) {
		t.Error("a sample at the limit was retaken")
	}
	if !disturbed(p, retaken, stolen(2.5)) {
		t.Error("a sample over the limit was kept")
	}
	if disturbed(model.Params{Samples: 3}, retaken, stolen(50)) {
		t.Error("retaken without a limit set")
	}
	retaken = 3
	if disturbed(p, retaken, stolen(50)) {
		t.Error("a fixed count of 3 retook a fourth sample")
	}
	p.TargetCIPct, p.MaxSamples = 1, 10
	if !disturbed(p, retaken, stolen(50)) {
		t.Error("a case that may take 10 samples stopped retaking after 3")
	}
}

// TestTurnsStopWhenDecided lets a decision between engines end their
// turns: tcp_stream is decided after three turns, tcp_rr never, so it
// samples to the maximum.
func TestTurnsStopWhenDecided(t *testing.T) {
	testutil.RequireTool(t, "iperf3")
	testutil.RequireTool(t, "sockperf")
	t.Parallel() // it counts turns, not what they measure: it runs beside the lock test
	r, st := newTestRunner(t)
	r.opts.MaxSamples = 4
	var asked []string
	r.opts.Decide = func(cs []*model.Case, samples [][]model.Sample) bool {
		counts := make([]int, len(samples))
		for i := range samples {
			counts[i] = len(samples[i])
		}
		asked = append(asked, fmt.Sprintf("%s %d engines %v", cs[0].Workload, len(cs), counts))
		return cs[0].Workload == "tcp_stream" && counts[0] >= 3
	}
	res := runDoc(t, r, st, "decide.yaml", `
name: decide
duration: 1s
warmup: 0s
samples: 2
modes: [veth]
topologies: [chc]
workloads: [tcp_stream, tcp_rr]
engines: [native, iperf3, sockperf]
`)
	t.Logf("asked: %q", asked)
	for _, c := range res.Cases {
		if c.Status == model.StatusSkipped {
			continue
		}
		want, stoppedBy := 3, "decided"
		if c.Workload == "tcp_rr" {
			want, stoppedBy = 4, "max_samples"
		}
		if c.Status != model.StatusOK || len(c.Samples) != want || c.Outcome.StoppedBy != stoppedBy {
			t.Errorf("%s: %s with %d samples, stopped by %q; want %d samples, stopped by %q", c.Key, c.Status, len(c.Samples), c.Outcome.StoppedBy, want, stoppedBy)
		}
	}
	// Asked only with every engine at its samples and the counts in
	// step: after each turn from the second on, until decided.
	wantAsked := []string{"tcp_stream 2 engines [2 2]", "tcp_stream 2 engines [3 3]", "tcp_rr 2 engines [2 2]", "tcp_rr 2 engines [3 3]", "tcp_rr 2 engines [4 4]"}
	slices.Sort(asked)
	slices.Sort(wantAsked)
	if !slices.Equal(asked, wantAsked) {
		t.Errorf("asked %q, want %q", asked, wantAsked)
	}
}

// TestTurnsStopOnTimeBudget ends a path that is never decided once its
// time budget is spent, long before its maximum, with its engines in
// step.
func TestTurnsStopOnTimeBudget(t *testing.T) {
	testutil.RequireTool(t, "iperf3")
	r, st := newTestRunner(t)
	r.opts.MaxSamples, r.opts.TimeBudget = 50, 3*time.Second
	r.opts.Decide = func([]*model.Case, [][]model.Sample) bool { return false }
	began := time.Now()
	res := runDoc(t, r, st, "budget.yaml", `
name: budget
duration: 1s
warmup: 0s
samples: 2
modes: [veth]
topologies: [chc]
workloads: [tcp_stream]
engines: [native, iperf3]
`)
	took := time.Since(began)
	var counts []int
	for _, c := range res.Cases {
		if c.Status != model.StatusOK || c.Outcome.StoppedBy != "time_budget" || c.Params.TimeBudgetMS != 3000 {
			t.Errorf("%s: %s %s, stopped by %q, budget %d ms; want ok, stopped by the 3000 ms budget", c.Key, c.Status, c.Reason, c.Outcome.StoppedBy, c.Params.TimeBudgetMS)
		}
		counts = append(counts, len(c.Samples))
	}
	// A turn of two 1 s samples spends about 2 s: the budget ends the
	// path after the second turn, rarely the third.
	if len(counts) != 2 || counts[0] != counts[1] || counts[0] < 2 || counts[0] > 3 {
		t.Errorf("samples per engine %v; want two equal counts of 2 or 3", counts)
	}
	t.Logf("samples per engine %v in %s", counts, took.Round(time.Millisecond))
}

// TestKeepCPUsAwakeWhileCasesRun runs a ping-pong, which leaves CPUs idle
// half the time, with spinners: the CPUs must not idle during the run,
// the cases must record it, and no spinner may outlive the run.
func TestKeepCPUsAwakeWhileCasesRun(t *testing.T) {
	r, st := newTestRunner(t)
	r.opts.KeepCPUsAwake = AwakeAlways
	before, began := testutil.IdleTicks(t), time.Now()
	res := runDoc(t, r, st, "awake.yaml", `
name: awake
duration: 1s
warmup: 0s
samples: 2
modes: [veth]
topologies: [chc]
workloads: [tcp_rr]
`)
	after, took := testutil.IdleTicks(t), time.Since(began)
	var idle int64
	for c := range after {
		idle += after[c] - before[c]
	}
	possible := took.Seconds() * testutil.TicksPerSecond * float64(len(after))
	if idle > int64(possible/10) {
		t.Errorf("the CPUs idled %d of %.0f ticks while the run kept them awake", idle, possible)
	}
	for _, c := range res.Cases {
		if c.Status != model.StatusOK || !c.Params.KeepCPUsAwake {
			t.Errorf("%s: %s %s, keep_cpus_awake %v", c.Key, c.Status, c.Reason, c.Params.KeepCPUsAwake)
		}
	}
	if left := childrenRunning(t, "awake"); len(left) > 0 {
		t.Errorf("spinner processes %v outlived the run", left)
	}
}

// TestKeepCPUsAwakeForRoundTripsOnly runs round trips and a slow stream,
// all of which leave the CPUs mostly idle, one after the other, and
// keeps the CPUs awake for round trips only: each round-trip sample must
// find the machine busy, as /proc/stat counts the spinners' time, and
// each stream sample must find it mostly idle, so the spinners were
// started, stopped and started again between the cases.
func TestKeepCPUsAwakeForRoundTripsOnly(t *testing.T) {
	r, st := newTestRunner(t)
	r.opts.KeepCPUsAwake = AwakeForRoundTrips
	r.opts.Order = OrderSequential
	res := runDoc(t, r, st, "awake-rr.yaml", `
name: awake-rr
duration: 1s
warmup: 0s
samples: 2
modes: [veth]
topologies: [chc]
workloads:
  - tcp_rr
  - {type: udp_stream, rate: 10mbit}
  - ping
`)
	cores := 100 * float64(runtime.NumCPU())
	for _, c := range res.Cases {
		roundTrip := c.Workload != workload.UDPStream
		if c.Status != model.StatusOK || c.Params.KeepCPUsAwake != roundTrip {
			t.Errorf("%s: %s %s, keep_cpus_awake %v; want ok, %v", c.Key, c.Status, c.Reason, c.Params.KeepCPUsAwake, roundTrip)
			continue
		}
		for _, s := range c.Samples {
			busy := s.Values[model.CPUMachinePct]
			t.Logf("%s sample %d: machine busy %.0f%% of one core", c.Key, s.Index, busy)
			switch {
			case roundTrip && busy < 0.9*cores:
				t.Errorf("%s sample %d: machine busy %.0f%% of one core with spinners on %d CPUs", c.Key, s.Index, busy, runtime.NumCPU())
			case !roundTrip && busy > 0.5*cores:
				t.Errorf("%s sample %d: machine busy %.0f%% of one core for a 10 Mbit/s stream: spinners ran", c.Key, s.Index, busy)
			}
		}
	}
	if left := childrenRunning(t, "awake"); len(left) > 0 {
		t.Errorf("spinner processes %v outlived the run", left)
	}
}

// childrenRunning lists this process's children whose command line has
// the argument arg.
func childrenRunning(t *testing.T, arg string) []int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range procs {
		stat, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != fmt.Sprint(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		if slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			var pid int
			fmt.Sscan(filepath.Base(filepath.Dir(p)), &pid)
			pids = append(pids, pid)
		}
	}
	return pids
}
