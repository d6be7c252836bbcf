package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"cnbench/internal/scenario"
	"cnbench/internal/testutil"
)

// TestValidateSpec holds the scenario validate builds to the one a file
// with its settings gives, and its flags' mistakes to errors naming the
// flag.
func TestValidateSpec(t *testing.T) {
	f := validateFlags{modes: []string{"veth", "bridge"}, topology: "chhc", samples: 3, place: "different_cores", duration: 1500 * time.Millisecond}
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

	for _, tt := range []struct {
		edit func(*validateFlags)
		flag string
	}{
		{func(f *validateFlags) { f.modes = []string{"bridge", "nope"} }, "--modes"},
		{func(f *validateFlags) { f.topology = "nope" }, "--topology"},
		{func(f *validateFlags) { f.samples = 0 }, "--samples"},
		{func(f *validateFlags) { f.duration = 0 }, "--duration"},
		{func(f *validateFlags) { f.place = "nowhere" }, "--placement"},
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

// TestValidateFlagsWhatItCannotVouchFor runs validate on the bridge mode
// with a throughput threshold of zero, which no two engines meet: it must
// print every check with its ratio and per-turn interval, flag the
// throughput unless the native engine lies between iperf3 and netperf,
// hold every stream engine's bytes to the interface counters, pin the
// engines, and exit 1 exactly when a row is flagged.
func TestValidateFlagsWhatItCannotVouchFor(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: validate creates network namespaces")
	}
	testutil.RequireTool(t, "iperf3")
	testutil.RequireTool(t, "sockperf")
	withNetperf := testutil.HasTool("netperf") && testutil.HasTool("netserver")
	if !withNetperf {
		t.Log("netperf is not installed: its checks must say so")
	}
	bin := buildBinary(t)
	db := filepath.Join(t.TempDir(), "v.db")
	cmd := exec.Command(bin, "validate", "--modes", "bridge", "--samples", "2", "--max-samples", "2", "--duration", "1s",
		"--throughput-threshold", "0", "--db", db, "--quiet")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String()
	t.Logf("validate:\n%s%s", out, stderr.String())
	rows := map[string]string{}
	checks := []string{
		"throughput native/iperf3", "throughput native/netperf",
		"tcp mean round trip native/sockperf", "tcp mean round trip native/netperf",
		"udp mean round trip native/sockperf", "udp mean round trip native/netperf",
		"received bytes/wire payload, native", "received bytes/wire payload, iperf3", "received bytes/wire payload, netperf",
	}
	for _, line := range strings.Split(out, "\n") {
		for _, what := range checks {
			if strings.Contains(line, what) {
				rows[what] = line
			}
		}
	}
	if len(rows) != len(checks) {
		t.Fatalf("%d of %d checks printed", len(rows), len(checks))
	}
	interval := regexp.MustCompile(`\[-?\d+\.\d{3}, \d+\.\d{3}\]`)
	ratio := regexp.MustCompile(`\s(\d+\.\d{3})\s+\[`)
	throughput := []string{rows["throughput native/iperf3"], rows["throughput native/netperf"]}
	between := 0
	for _, r := range throughput {
		if strings.Contains(r, "not compared") {
			continue
		}
		if !interval.MatchString(r) {
			t.Errorf("throughput row without its interval: %s", r)
		}
		switch {
		case strings.Contains(r, "agree: between it and"):
			between++
		case !strings.Contains(r, "DISAGREE"):
			t.Errorf("throughput row neither flagged nor between the references at a zero threshold: %s", r)
		}
	}
	switch {
	case !withNetperf && !strings.Contains(throughput[1], "not compared: netperf"):
		t.Errorf("netperf's throughput check does not say it is missing: %s", throughput[1])
	case between == 1:
		t.Errorf("only one of the two references has the native engine between them:\n%s\n%s", throughput[0], throughput[1])
	case between == 2:
		// Between means one ratio above 1 and the other below.
		side := func(row string) float64 {
			m := ratio.FindStringSubmatch(row)
			if m == nil {
				return 0
			}
			v, _ := strconv.ParseFloat(m[1], 64)
			return v - 1
		}
		if a, b := side(throughput[0]), side(throughput[1]); a*b >= 0 {
			t.Errorf("between the references, yet both ratios on one side of 1:\n%s\n%s", throughput[0], throughput[1])
		}
	}
	// The exit status follows the rows: 1 when any is flagged. At a zero
	// throughput threshold that is certain unless the native engine lies
	// between the references; two samples may flag a round trip too.
	want := 0
	if strings.Contains(out, "DISAGREE") {
		want = 1
	}
	if between == 0 && want != 1 {
		t.Errorf("no throughput row between the references, yet nothing flagged")
	}
	if code := cmd.ProcessState.ExitCode(); code != want {
		t.Fatalf("exit %d (%v), want %d", code, err, want)
	}
	for _, what := range []string{"tcp mean round trip native/sockperf", "udp mean round trip native/sockperf"} {
		if r := rows[what]; !interval.MatchString(r) {
			t.Errorf("round-trip row without its interval: %s", r)
		}
	}
	engines := []string{"native", "iperf3"}
	if withNetperf {
		engines = append(engines, "netperf")
	}
	for _, e := range engines {
		if r := rows["received bytes/wire payload, "+e]; !strings.Contains(r, "agree") || strings.Contains(r, "DISAGREE") {
			t.Errorf("%s's bytes disagree with the interface counters: %s", e, r)
		}
	}
	code, rep, errOut := runCLI(t, "report", "--db", db, "--format", "json")
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	if runtime.NumCPU() >= 2 && !strings.Contains(rep, `"placement": "different_cores"`) && !strings.Contains(rep, `"placement":"different_cores"`) {
		t.Errorf("the validation run was not pinned to different cores:\n%.2000s", rep)
	}
	if !regexp.MustCompile(`"time_budget_ms": ?180000`).MatchString(rep) {
		t.Errorf("the validation run's cases do not record the default 3 min time budget:\n%.2000s", rep)
	}
}
