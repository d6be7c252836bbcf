package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"cnbench/internal/scenario"
	"cnbench/internal/testutil"
	"cnbench/internal/validate"
)

// TestValidateSpec holds the scenario validate builds to the one a file
// with its settings gives, and its flags' mistakes to errors naming the
// flag.
func TestValidateSpec(t *testing.T) {
	f := validateFlags{modes: []string{"veth", "bridge"}, workloads: validate.Workloads, topology: "chhc", samples: 3, place: "different_cores", duration: 1500 * time.Millisecond}
	got, err := validateSpec(f)
	if err != nil {
		t.Fatal(err)
	}
	doc := `name: validate
duration: 1500ms
warmup: 1s
samples: 3
modes: [veth, bridge]
topologies: [chhc]
placement: [different_cores]
workloads:
  - {type: tcp_stream, flows: 1, msg_size: 128K}
  - {type: tcp_rr, request_size: 64, response_size: 64}
  - {type: udp_rr, request_size: 64, response_size: 64}
engines: [native, iperf3, sockperf, netperf]
`
	want, err := scenario.Parse("", []byte(doc), vocabulary())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("validate's scenario\n got %+v\nwant %+v", got, want)
	}
	stream := f
	stream.workloads = []string{"tcp_stream"}
	if got, err := validateSpec(stream); err != nil || len(got.Workloads) != 1 || got.Workloads[0].Type != "tcp_stream" {
		t.Errorf("--workloads tcp_stream: %+v, %v", got, err)
	}
	f6 := f
	f6.family = "ipv6"
	if got, err := validateSpec(f6); err != nil || got.Topologies[0] != (scenario.Topology{Name: "chhc", Family: "ipv6"}) {
		t.Errorf("--family ipv6: %+v, %v", got, err)
	}

	for _, tt := range []struct {
		edit func(*validateFlags)
		flag string
	}{
		{func(f *validateFlags) { f.modes = []string{"bridge", "nope"} }, "--modes"},
		{func(f *validateFlags) { f.topology = "nope" }, "--topology"},
		{func(f *validateFlags) { f.samples = 0 }, "--samples"},
		{func(f *validateFlags) { f.duration = 0 }, "--duration"},
		{func(f *validateFlags) { f.place = "nowhere" }, "--placement"},
		{func(f *validateFlags) { f.family = "ipv5" }, "--family"},
		{func(f *validateFlags) { f.workloads = []string{"tcp_stream", "tcp_crr"} }, "--workloads"},
	} {
		bad := f
		tt.edit(&bad)
		_, err := validateSpec(bad)
		var se *scenario.Error
		if !errors.As(err, &se) || se.Path != tt.flag {
			t.Errorf("%s: got %v, want an error naming the flag", tt.flag, err)
		}
	}
}

// validateRun is one run of a cnbench binary's validate on veth, with
// two short turns per path: its rows by check, its exit code and output,
// and its database.
type validateRun struct {
	rows         map[string]string
	code         int
	out, errText string
	db           string
}

// validateChecks are the rows validate prints per mode.
var validateChecks = []string{
	"throughput native/iperf3", "throughput native/netperf",
	"tcp mean round trip native/sockperf", "tcp mean round trip native/netperf",
	"udp mean round trip native/sockperf", "udp mean round trip native/netperf",
	"received bytes/wire payload, native", "received bytes/wire payload, iperf3", "received bytes/wire payload, netperf",
	"udp loss/kernel counters, native",
}

// runValidateBinary runs validate with bin; workloads, when given,
// restrict it to those, and to their checks.
func runValidateBinary(t *testing.T, bin string, workloads ...string) validateRun {
	t.Helper()
	r := validateRun{rows: map[string]string{}, db: filepath.Join(t.TempDir(), "v.db")}
	args := []string{"validate", "--modes", "veth", "--samples", "2", "--max-samples", "2", "--duration", "1s", "--db", r.db, "--quiet"}
	want := validateChecks
	if len(workloads) > 0 {
		args = append(args, "--workloads", strings.Join(workloads, ","))
		want = checksOf(workloads)
	}
	cmd := exec.Command(bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	r.code, r.out, r.errText = cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	t.Logf("validate (exit %d):\n%s%s", r.code, r.out, r.errText)
	for _, line := range strings.Split(r.out, "\n") {
		for _, what := range validateChecks {
			if strings.Contains(line, " "+what+" ") {
				r.rows[what] = line
			}
		}
	}
	if len(r.rows) != len(want) {
		t.Fatalf("%d checks printed (%v), want %d: %v", len(r.rows), slices.Collect(maps.Keys(r.rows)), len(want), want)
	}
	return r
}

// checksOf are the rows of validateChecks a validation of workloads
// prints: the streams' throughput and received bytes, the round trips
// of the others, and udp_rr's loss.
func checksOf(workloads []string) []string {
	var out []string
	for _, what := range validateChecks {
		stream := strings.HasPrefix(what, "throughput") || strings.HasPrefix(what, "received bytes")
		tcp := strings.HasPrefix(what, "tcp mean")
		udp := strings.HasPrefix(what, "udp")
		if stream && slices.Contains(workloads, "tcp_stream") || tcp && slices.Contains(workloads, "tcp_rr") || udp && slices.Contains(workloads, "udp_rr") {
			out = append(out, what)
		}
	}
	return out
}

// caseMetric is a metric's mean over one case of a validation run's
// report.
func caseMetric(t *testing.T, report, workload, engine, metric string) float64 {
	t.Helper()
	var doc struct {
		Cases []struct {
			Workload, Engine string
			Metrics          map[string]struct{ Mean float64 }
		}
	}
	if err := json.Unmarshal([]byte(report), &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Cases {
		if c.Workload == workload && c.Engine == engine {
			if m, ok := c.Metrics[metric]; ok {
				return m.Mean
			}
		}
	}
	t.Fatalf("no %s of %s %s in the report", metric, engine, workload)
	return 0
}

// checkSpinnersForRoundTrips requires validate's default, recorded in
// each case: the CPUs kept awake for round trips, left alone for the
// stream.
func checkSpinnersForRoundTrips(t *testing.T, report string) {
	t.Helper()
	var doc struct {
		Cases []struct {
			Key    string
			Params struct {
				KeepCPUsAwake bool `json:"keep_cpus_awake"`
			}
		}
	}
	if err := json.Unmarshal([]byte(report), &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Cases {
		if want := !strings.Contains(c.Key, "/tcp_stream"); c.Params.KeepCPUsAwake != want {
			t.Errorf("%s: keep_cpus_awake %v, want %v", c.Key, c.Params.KeepCPUsAwake, want)
		}
	}
	if len(doc.Cases) == 0 {
		t.Error("no cases in the validation run's report")
	}
}

// TestValidateHoldsTheNativeEngineToTheCounters runs validate on veth
// with the native engine as built, and with one built to report 64
// times the bytes it received. As built, the stored figures agree with
// the receiver's interface counters and the kernel's UDP counters by the
// test's own arithmetic, every accuracy row passes, and the exit code
// follows the comparability rows (0, or 4 when the native engine is
// behind or apart from a reference on this machine). Misreporting, the
// native engine's bytes row fails as an accuracy check and validate
// exits 1, though its throughput row only says it was faster.
func TestValidateHoldsTheNativeEngineToTheCounters(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: validate creates network namespaces")
	}
	// Its accuracy rows hold under load, and its exit code follows its
	// comparability rows, whichever way the load tips them: it runs
	// beside the study suites.
	t.Parallel()
	testutil.RequireTool(t, "iperf3")
	testutil.RequireTool(t, "sockperf")
	withNetperf := testutil.HasTool("netperf") && testutil.HasTool("netserver")
	r := runValidateBinary(t, buildBinary(t))
	checkKinds(t, r, withNetperf)
	for _, what := range validateChecks[6:] {
		if row := r.rows[what]; !strings.Contains(row, " ok (within 2%)") && !(what == validateChecks[8] && !withNetperf) {
			t.Errorf("accuracy row did not pass: %s", row)
		}
	}
	want := 0
	switch {
	case strings.Contains(r.errText, "cases failed"):
		// A reference's case failed: validate has not checked all it
		// was asked to, and says so.
		if strings.Contains(r.errText, "/native/") {
			t.Errorf("the native engine failed: %s", r.errText)
		}
		want = exitFailure
	case strings.Contains(r.out, "FAIL comparability"):
		want = exitIncomparable
	}
	if strings.Contains(r.out, "FAIL accuracy") || r.code != want {
		t.Fatalf("exit %d, want %d: %s", r.code, want, r.errText)
	}
	if n := strings.Count(r.out, "undecided: native"); n > 0 && !strings.Contains(r.errText, fmt.Sprintf("undecided, not failed: %d comparison", n)) {
		t.Errorf("%d rows undecided, and stderr does not say so: %s", n, r.errText)
	}
	code, rep, errOut := runCLI(t, "report", "--db", r.db, "--format", "json")
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	checkAgainstCounters(t, rep)
	if runtime.NumCPU() >= 2 && !regexp.MustCompile(`"placement": ?"different_cores"`).MatchString(rep) {
		t.Errorf("the validation run was not pinned to different cores:\n%.2000s", rep)
	}
	if !regexp.MustCompile(`"time_budget_ms": ?180000`).MatchString(rep) {
		t.Errorf("the validation run's cases do not record the default 3 min time budget:\n%.2000s", rep)
	}
	checkSpinnersForRoundTrips(t, rep)

	broken := filepath.Join(t.TempDir(), "cnbench-misreport")
	if out, err := exec.Command("go", "build", "-tags", "cnbench_misreport", "-o", broken, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags cnbench_misreport: %v\n%s", err, out)
	}
	// The stream alone: its rows are the ones a misreport shows in.
	r = runValidateBinary(t, broken, "tcp_stream")
	checkKinds(t, r, withNetperf)
	if row := r.rows["received bytes/wire payload, native"]; !regexp.MustCompile(` 6\d\.\d{3}\s.*FAIL accuracy: off the kernel's counters by 6\d\.\dx`).MatchString(row) {
		t.Errorf("64 times the bytes received, yet: %s", row)
	}
	if row := r.rows["throughput native/iperf3"]; !strings.Contains(row, "native faster") {
		t.Errorf("64 times the throughput is, by comparability alone, the native engine faster: %s", row)
	}
	if r.code != exitFailure || !strings.Contains(r.errText, "accuracy:") || !strings.Contains(r.errText, "veth received bytes/wire payload, native") {
		t.Errorf("a misreporting native engine: exit %d, want %d with an accuracy failure: %s", r.code, exitFailure, r.errText)
	}
}

// checkKinds holds each row to its kind and its verdict to the words
// of that kind.
func checkKinds(t *testing.T, r validateRun, withNetperf bool) {
	t.Helper()
	interval := regexp.MustCompile(`\[-?\d+\.\d{3}, \d+\.\d{3}\]`)
	verdicts := regexp.MustCompile(`agree \(within|agree: (within|between)|native faster: reference (CPU-bound|below a core) \(\w+ sender \d+%, receiver \d+%; native \d+%, \d+% of a core\)|(FAIL comparability|undecided): native [\d.]+(%|x) (slower|longer|shorter) than|FAIL accuracy|ok \(within`)
	for i, what := range validateChecks {
		row, ok := r.rows[what]
		if !ok {
			continue // not asked for: runValidateBinary holds the rows to the workloads
		}
		kind := "comparability"
		if i >= 6 {
			kind = "accuracy"
		}
		if !strings.Contains(row, " "+kind+" ") {
			t.Errorf("row without its kind %s: %s", kind, row)
		}
		if strings.Contains(row, "not compared") {
			// A reference that is not installed, or failed on a busy
			// machine (sockperf's client sometimes hears no answer), has
			// nothing to compare with; the native engine always has.
			missing := !withNetperf && strings.Contains(what, "netperf")
			if !missing && (!strings.Contains(row, ": failed") || strings.Contains(row, "not compared: native")) {
				t.Errorf("not compared: %s", row)
			}
			continue
		}
		if !verdicts.MatchString(row) {
			t.Errorf("row without a verdict of its kind: %s", row)
		}
		if i < 6 && !interval.MatchString(row) {
			t.Errorf("comparability row without its interval: %s", row)
		}
		if strings.Contains(what, "throughput") && strings.Contains(row, "FAIL") && !strings.Contains(row, "the native engine is the bottleneck") {
			t.Errorf("a throughput failure not named as the native engine's: %s", row)
		}
	}
}

// checkAgainstCounters recomputes from the stored figures what the
// counters say: the native engine's stream bytes against the bytes the
// receiver's interfaces counted (the payload is at most that, and
// headers are a few % of it at most), its throughput against theirs over
// the sample's second, and its udp_rr requests against the datagrams the
// server's namespace delivered.
func checkAgainstCounters(t *testing.T, rep string) {
	t.Helper()
	received := caseMetric(t, rep, "tcp_stream", "native", "received_bytes")
	wire := caseMetric(t, rep, "tcp_stream", "native", "wire_rx_bytes")
	if r := received / wire; r < 0.9 || r > 1 {
		t.Errorf("native received %.0f bytes, the interfaces %.0f: ratio %.4f outside [0.9, 1]", received, wire, r)
	}
	bps := caseMetric(t, rep, "tcp_stream", "native", "throughput_bps")
	if r := bps / (wire * 8); r < 0.5 || r > 2 {
		t.Errorf("native %.3g bit/s against %.3g bit/s on the wire over its 1 s samples", bps, wire*8)
	}
	sent := caseMetric(t, rep, "udp_rr", "native", "sent_packets")
	delivered := caseMetric(t, rep, "udp_rr", "native", "udp_in_datagrams")
	if r := delivered / sent; r < 0.98 || r > 1.0001 {
		t.Errorf("native sent %.0f requests, the kernel delivered %.0f", sent, delivered)
	}
}
