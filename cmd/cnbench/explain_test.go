package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cnbench/internal/explain"
	"cnbench/internal/report"
	"cnbench/internal/testutil"
)

type explainedCase struct {
	Index       int                `json:"index"`
	Key         string             `json:"key"`
	Summary     string             `json:"summary"`
	Explanation report.Explanation `json:"explanation"`
	// engineCPUPerUnit is the engines' own CPU seconds per unit of the
	// case (cpu_s_per_gb, cpu_us_per_tx), from report --format json.
	engineCPUPerUnit float64
	// meanRTTUS is the engine's mean round trip (latency_mean_us).
	meanRTTUS float64
}

func explained(t *testing.T, db string) map[string]explainedCase {
	t.Helper()
	code, out, errOut := runCLI(t, "explain", "--db", db, "--format", "json")
	if code != 0 {
		t.Fatalf("explain exited %d: %s", code, errOut)
	}
	var doc struct {
		Cases []explainedCase `json:"cases"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("explain --format json: %v\n%s", err, out)
	}
	code, out, errOut = runCLI(t, "report", "--db", db, "--format", "json")
	if code != 0 {
		t.Fatalf("report exited %d: %s", code, errOut)
	}
	var rep struct {
		Cases []struct {
			Key     string `json:"key"`
			Metrics map[string]struct {
				Mean float64 `json:"mean"`
			} `json:"metrics"`
		} `json:"cases"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	perUnit, rtt := map[string]float64{}, map[string]float64{}
	for _, c := range rep.Cases {
		perUnit[c.Key] = c.Metrics["cpu_s_per_gb"].Mean + c.Metrics["cpu_us_per_tx"].Mean/1e6
		rtt[c.Key] = c.Metrics["latency_mean_us"].Mean
	}
	byMode := map[string]explainedCase{}
	for _, c := range doc.Cases {
		c.engineCPUPerUnit = perUnit[c.Key]
		c.meanRTTUS = rtt[c.Key]
		// mode/topology/workload(params)/engine
		parts := strings.SplitN(c.Key, "/", 4)
		name := parts[0]
		if len(parts) > 2 && strings.HasPrefix(parts[2], "tcp_rr") {
			name += " rr"
		}
		byMode[name] = c
	}
	return byMode
}

// TestExplainShowsEachModesStages runs host, bridge and nat with
// --explain and reads the signatures a reviewer would look for: bridge
// work in bridge and not in host, NAT and netfilter in nat; the stages
// of every case add up to the machine's busy time by /proc/stat within
// 5%, with less than 15% left to "other".
func TestExplainShowsEachModesStages(t *testing.T) {
	testutil.RequireRoot(t)
	if err := explain.Available(); err != nil {
		t.Skip("cannot profile here: ", err)
	}
	db := filepath.Join(t.TempDir(), "explain.db")
	code, _, errOut := runCLI(t, "run", "-q", "--db", db, "--modes", "host,bridge,nat", "--topologies", "chc",
		"--workloads", "tcp_stream,tcp_rr", "--samples", "2", "--duration", "1s", "--warmup", "200ms", "--explain")
	if code != 0 {
		t.Fatalf("run exited %d: %s", code, errOut)
	}
	cases := explained(t, db)
	for _, mode := range []string{"host", "bridge", "nat", "host rr", "bridge rr", "nat rr"} {
		c, ok := cases[mode]
		if !ok || c.Explanation.Breakdown == nil {
			t.Fatalf("%s has no breakdown: %+v", mode, c)
		}
		b := c.Explanation.Breakdown
		t.Logf("%s: %.4g CPU-s per %s, stacks cover %.1f%% (%.3f CPU-s stolen), other %.1f%%: %v", mode, b.TotalPerUnitS, b.Unit, b.StacksCoverPct, b.MachineStealS, b.OtherPct, b.PerUnitS)
		// A sample whose recording failed (perf under the suite's other
		// packages) is left out with its note, and says so.
		unit := map[bool]string{true: "tx", false: "GB"}[strings.HasSuffix(mode, " rr")]
		if b.Unit != unit || !(b.Samples == 2 || b.Samples == 1 && len(b.Notes) > 0) {
			t.Errorf("%s: unit %q over %d samples (notes %q); want %s over 2, or 1 and the other's note", mode, b.Unit, b.Samples, b.Notes, unit)
		} else if b.Samples == 1 {
			t.Logf("%s: one sample left out: %q", mode, b.Notes)
		}
		// The stacks may miss periods (interrupts off, late timers) but
		// never see more busy time than the kernel counted, with the time
		// the hypervisor stole from busy CPUs, which the profiler's timer
		// runs on through and /proc/stat counts apart. Round trips
		// wake and idle thousands of times a second, between which both
		// the 4 ms stacks and the kernel's own tick-based count sample
		// short bursts: on a machine of this kind their stacks covered
		// 63-79% in ten runs, the old code and the new alike, where
		// streams covered 89-97%.
		floor := 70.0
		if unit == "tx" {
			floor = 55
		}
		if b.StacksCoverPct < floor || b.SampledBusyS > 1.15*(b.MachineBusyS+b.MachineStealS) {
			t.Errorf("%s: stacks stand for %.3f CPU-s, /proc/stat counted %.3f busy and %.3f stolen (%.1f%% of busy, below %.0f%%, or above 115%% of both)",
				mode, b.SampledBusyS, b.MachineBusyS, b.MachineStealS, b.StacksCoverPct, floor)
		}
		// What the stages add up to is the kernel's busy time per unit,
		// which holds the engines' own CPU per unit, measured apart
		// from their cgroups. The cgroups count to the nanosecond; the
		// kernel's busy time is charged a tick at a time, which a round
		// trip's short bursts fall between: bridge rr once summed to
		// 0.93 of its engines' where its stacks covered 92%.
		engines := c.engineCPUPerUnit
		least := 0.95
		if unit == "tx" {
			least = 0.85
		}
		if sum := b.TotalPerUnitS + b.ProfilerPerUnitS; engines <= 0 || sum < least*engines {
			t.Errorf("%s: the stages add up to %.4g CPU-s per %s, below the engines' own %.4g", mode, sum, b.Unit, engines)
		}
		if b.OtherPct >= 15 {
			t.Errorf("%s: other is %.1f%% of the busy time", mode, b.OtherPct)
		}
	}
	host, bridge, nat := cases["host"].Explanation.Breakdown, cases["bridge"].Explanation.Breakdown, cases["nat"].Explanation.Breakdown
	// A stage of a few stacks is a few stacks: the other modes' bridges
	// stay up while host is measured, and their link-local chatter can put
	// a stack in host's bridge stage. So the signatures are the device
	// stages together, against host's.
	sum := func(b *explain.Breakdown, stages ...string) float64 {
		total := 0.0
		for _, s := range stages {
			total += b.PerUnitS[s]
		}
		return total
	}
	devices := []string{"bridge", "veth", "netfilter"}
	if h, b := sum(host, devices...), sum(bridge, devices...); h >= b/2 {
		t.Errorf("bridge, veth and netfilter work: host %g, bridge %g (its bridge stage %g); want bridge's, and host's under half of it",
			h, b, bridge.PerUnitS["bridge"])
	}
	translation := []string{"nat", "netfilter"}
	if h, n := sum(host, translation...), sum(nat, translation...); h >= n/2 {
		t.Errorf("NAT and netfilter work: host %g, nat %g (its NAT stage %g); want nat's, and host's under half of it", h, n, nat.PerUnitS["nat"])
	}
	for _, mode := range []string{"bridge", "nat"} {
		if c := cases[mode]; c.Explanation.VsHost == nil || !strings.HasPrefix(c.Summary, mode+"/chc costs") {
			t.Errorf("%s: no comparison with host: %+v", mode, c)
		}
	}
	checkPaths(t, cases)

	code, table, _ := runCLI(t, "explain", "--db", db, "bridge/chc")
	if code != 0 || !strings.Contains(table, "CPU-s/GB") || !strings.Contains(table, "bridge/chc costs") || strings.Contains(table, "nat/chc") ||
		!strings.Contains(table, "first to last stage") {
		t.Errorf("explain bridge/chc exited %d:\n%s", code, table)
	}
	if code, _, errOut := runCLI(t, "explain", "--db", db, "ipvlan/chc"); code != 2 {
		t.Errorf("explain of no case exited %d, want 2: %s", code, errOut)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if code, _, errOut := runCLI(t, "report", "--db", db, "--format", "html", "-o", page); code != 0 {
		t.Fatalf("report --format html exited %d: %s", code, errOut)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="chart-explain-tcp_stream"`, `id="flame-`, `class="flame"`, `id="path-`, "socket@server → read@server"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the HTML report lacks %s", want)
		}
	}
}

// TestExplainWithoutPerfSaysWhy: where perf cannot run, an explained case
// still measures and says why it has no explanation.
func TestExplainWithoutPerfSaysWhy(t *testing.T) {
	testutil.RequireRoot(t)
	t.Setenv("PATH", t.TempDir())
	db := filepath.Join(t.TempDir(), "noperf.db")
	code, _, errOut := runCLI(t, "run", "-q", "--db", db, "--modes", "bridge", "--topologies", "chc",
		"--workloads", "tcp_rr", "--samples", "1", "--duration", "300ms", "--warmup", "0s", "--explain")
	if code != 0 {
		t.Fatalf("run exited %d: %s", code, errOut)
	}
	c := explained(t, db)["bridge rr"]
	if c.Explanation.Breakdown != nil || !strings.Contains(c.Explanation.Note, "perf is not installed") {
		t.Errorf("explanation without perf: %+v", c.Explanation)
	}
	code, table, _ := runCLI(t, "explain", "--db", db)
	if code != 0 || !strings.Contains(table, "no explanation: perf is not installed") {
		t.Errorf("explain exited %d:\n%s", code, table)
	}
}

// checkPaths reads the request/response cases' time between stages: host
// (both endpoints in one namespace) over loopback, bridge through the
// host's two bridge ports, nat likewise; every direction starts at TCP's
// send and ends at the read, its gaps add up to about its total, and the
// cases through the bridge are compared with host.
func checkPaths(t *testing.T, cases map[string]explainedCase) {
	t.Helper()
	want := map[string][]string{
		"host rr":   {"either: send@client+server > tx lo@client+server > rx lo@client+server > socket@client+server > read@client+server"},
		"bridge rr": {"request: send@client > tx eth0@client > rx ", " > rx eth0@server > socket@server > read@server", "response: send@server > tx eth0@server > "},
		"nat rr":    {"request: send@client > tx eth0@client > rx ", " > socket@server > read@server", "response: send@server > "},
	}
	for mode, parts := range want {
		p := cases[mode].Explanation.Path
		if p == nil || len(p.Directions) == 0 {
			t.Errorf("%s: no time between stages: %+v", mode, p)
			continue
		}
		var got []string
		ways := 0.0
		for _, d := range p.Directions {
			ways += d.MeanUS
			if d.Direction == "either" {
				ways += d.MeanUS // it stands for both
			}
			got = append(got, d.Direction+": "+strings.Join(d.Stages, " > "))
			sum := 0.0
			for _, g := range d.GapsUS {
				sum += g
			}
			t.Logf("%s %s: %d messages, total %.2f us (mean %.2f), gaps %v", mode, d.Direction, d.Messages, d.TotalUS, d.MeanUS, d.GapsUS)
			if d.Messages < 100 || d.TotalUS <= 0 || sum < 0.7*d.TotalUS || sum > 1.3*d.TotalUS {
				t.Errorf("%s %s: %d messages, total %.2f us, gaps add to %.2f", mode, d.Direction, d.Messages, d.TotalUS, sum)
			}
		}
		// The two ways' means, send to read each, are the mean round trip
		// less the endpoints' turnarounds. Means, not medians: a reader
		// already awake reads within a few us, one woken takes 20, and
		// a median of such times can fall in either group (a run read
		// medians adding to 6 us of a 30 us round trip).
		rtt := cases[mode].meanRTTUS
		t.Logf("%s: the two ways' means add up to %.1f us of the engine's mean round trip %.1f us", mode, ways, rtt)
		if rtt <= 0 || ways < 0.6*rtt || ways > 1.4*rtt {
			t.Errorf("%s: the two ways add up to %.1f us, the engine's mean round trip is %.1f us", mode, ways, rtt)
		}
		all := strings.Join(got, "\n")
		for _, part := range parts {
			if !strings.Contains(all, part) {
				t.Errorf("%s: paths\n%s\nlack %q", mode, all, part)
			}
		}
		if mode != "host rr" {
			if _, ok := cases[mode].Explanation.PathVsHostUS["request"]; !ok {
				t.Errorf("%s: no comparison of the path with host: %v", mode, cases[mode].Explanation.PathVsHostUS)
			}
		}
	}
	if bridge := cases["bridge rr"].Explanation.Path; bridge != nil && len(bridge.Directions) > 0 {
		if s := strings.Join(bridge.Directions[0].Stages, " "); !strings.Contains(s, "tx v-s1@") {
			t.Errorf("bridge: the request is not seen leaving the bridge's server port: %s", s)
		}
	}
}
