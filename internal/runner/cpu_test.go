package runner

import (
	"context"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"cnbench/internal/cpu"
	"cnbench/internal/measure"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/pinning"
	"cnbench/internal/site"
	"cnbench/internal/testutil"
)

// TestCPUAddsUpAtScale runs a stream at 1 flow and at 64 endpoints of 16
// flows and checks each sample's CPU account: sender + receiver + the
// softirq apart + the rest is the machine's busy time from /proc/stat,
// nothing in it is counted twice, and cpu_s_per_gb describes the same
// seconds as the percentages.
func TestCPUAddsUpAtScale(t *testing.T) {
	const run = time.Second
	cases := runScenarioText(t, `{name: cpu, duration: `+run.String()+`, warmup: 0s, samples: 1, modes: [bridge], topologies: [chc], workloads: [
  {type: tcp_stream, flows: 1},
  {type: tcp_stream, pattern: containers_x_flows, clients: 64, flows: 16, send_buffer: 256K, receive_buffer: 256K}]}`)
	if len(cases) != 2 {
		t.Fatalf("%d cases, want 2", len(cases))
	}
	m, err := pinning.ReadMachine()
	if err != nil {
		t.Fatal(err)
	}
	cores := float64(len(m))
	for _, c := range cases {
		if c.Status != model.StatusOK || len(c.Samples) == 0 {
			t.Errorf("%s: %s %s", c.Key, c.Status, c.Reason)
			continue
		}
		s := c.Samples[0]
		v := s.Values
		both := v[model.CPUSenderPct] + v[model.CPUReceiverPct]
		machine, ok := v[model.CPUMachinePct]
		sum := both + v[model.CPUSoftirqApartPct] + v[model.CPUOtherPct]
		t.Logf("%s: sender %.1f receiver %.1f softirq %.1f (apart %.1f) other %.1f machine %.1f, %.2f Gbit/s, %.3f s/GB over %v",
			c.Key, v[model.CPUSenderPct], v[model.CPUReceiverPct], v[model.CPUSoftirqPct], v[model.CPUSoftirqApartPct],
			v[model.CPUOtherPct], machine, v[model.ThroughputBPS]/1e9, v[model.CPUSPerGB], s.Duration)
		if !ok || math.Abs(sum-machine) > 0.05*machine {
			t.Errorf("%s: sender + receiver + softirq apart + other = %.1f%%, machine %.1f%% (present %v)", c.Key, sum, machine, ok)
		}
		if machine > 105*cores || v[model.CPUOtherPct] < -0.05*machine {
			t.Errorf("%s: machine %.1f%% of %v cores, other %.1f%%: counted twice", c.Key, machine, cores, v[model.CPUOtherPct])
		}
		// The same seconds: CPU-seconds per GB times the GB received
		// over the sample are the cores the percentages report.
		spent := v[model.CPUSPerGB] * v[model.ReceivedBytes] / 1e9 / s.Duration.Seconds() * 100
		if math.Abs(spent-both) > 0.05*both {
			t.Errorf("%s: cpu_s_per_gb over the sample is %.1f%% of a core, sender + receiver %.1f%%", c.Key, spent, both)
		}
		// Throughput is over a span inside the readings, which also
		// hold the flows' closing. Across endpoints the span starts at
		// the first byte sent, and every client sends for the run's
		// second from its start, so it holds that second. One flow's
		// starts at its first byte received, a few milliseconds in (13
		// ms seen; more where other tests share the CPUs). A span that
		// began at the first byte received across endpoints was 0.3 s
		// short at 64 endpoints of 16 flows, and CPU-seconds per GB at
		// that rate read 211% on two cores; one from the last
		// endpoint's first byte read 0.905 to 0.958 s.
		span := v[model.ReceivedBytes] * 8 / v[model.ThroughputBPS]
		least := 0.9 * run.Seconds()
		if c.Params.Clients > 1 {
			least = 0.99 * run.Seconds()
		}
		t.Logf("%s: throughput over %.3f s", c.Key, span)
		if span < least || span > 1.01*s.Duration.Seconds() {
			t.Errorf("%s: %.2f Gbit/s is %.0f bytes over %.3f s: less than %.2f s of sending or more than the readings' %v",
				c.Key, v[model.ThroughputBPS]/1e9, v[model.ReceivedBytes], span, least, s.Duration)
		}
	}
}

// TestCPUAttributesABusyLoop starts a busy loop in a client endpoint's
// cgroup and holds the sample's sender CPU to the loop's own run time
// from its schedstat, over the same readings.
func TestCPUAttributesABusyLoop(t *testing.T) {
	c := model.Case{Mode: "bridge", Topology: "chc", Workload: "tcp_stream", Params: model.Params{Flows: 1}}
	p := placeCase(t, &c, nil)
	loop, err := p.Client().Start([]string{"sh", "-c", "while :; do :; done"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Kill()
	pid := loop.Cmd.Process.Pid
	time.Sleep(100 * time.Millisecond)
	ran := runTime(t, pid)
	s, err := measure.Take(context.Background(), idleExchange{time.Second}, p, c, time.Second, nil)
	ran = runTime(t, pid) - ran
	if err != nil {
		t.Fatal(err)
	}
	v := s.Values
	got := time.Duration(v[model.CPUSenderPct] / 100 * float64(s.Duration))
	t.Logf("busy loop ran %v, sender %v (%.1f%%), receiver %.1f%%, other %.1f%%, machine %.1f%% over %v",
		ran, got, v[model.CPUSenderPct], v[model.CPUReceiverPct], v[model.CPUOtherPct], v[model.CPUMachinePct], s.Duration)
	if ran < 20*time.Millisecond {
		t.Skipf("the busy loop got %v of the CPU in %v: the machine is too busy to judge", ran, s.Duration)
	}
	// The loop's run time is read just outside the sample's readings, a
	// few milliseconds wider.
	if math.Abs(float64(got-ran)) > max(0.05*float64(ran), float64(10*time.Millisecond)) {
		t.Errorf("sender %v, the busy loop ran %v", got, ran)
	}
	if v[model.CPUReceiverPct] > 5 {
		t.Errorf("receiver %.1f%% with nothing running there", v[model.CPUReceiverPct])
	}
	if v[model.CPUMachinePct] < 0.95*v[model.CPUSenderPct] {
		t.Errorf("machine %.1f%%, less than the busy loop's %.1f%%", v[model.CPUMachinePct], v[model.CPUSenderPct])
	}
}

// idleExchange waits out the sample and reports one received byte, so
// that a stream's figures can be computed.
type idleExchange struct{ d time.Duration }

func (e idleExchange) Exchange(ctx context.Context, _ model.Case, _ time.Duration) (measure.Exchange, error) {
	time.Sleep(e.d)
	return measure.Exchange{ReceivedBytes: 1, SentBytes: 1, ReceiveTime: e.d}, nil
}

// runTime is a process's run time so far, the first field of schedstat.
func runTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(n)
}

// placeCase builds c's path on this machine's emulated hosts, its sites'
// processes started with env, and removes it when the test ends. A mode
// this machine lacks skips the test.
func placeCase(t *testing.T, c *model.Case, env []string) *site.Path {
	t.Helper()
	testutil.RequireRoot(t)
	hier, err := cpu.FindHierarchy()
	if err != nil {
		t.Skip(err)
	}
	plan, err := site.PlanFor(c)
	if errors.Is(err, mode.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	em := &site.Emulated{Token: netns.NewToken(), Hier: hier, Env: env}
	p, err := em.Place(context.Background(), c, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := errors.Join(p.Close(), em.Close()); err != nil {
			t.Error(err)
		}
	})
	return p
}
