package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"cnbench/internal/testutil"
)

// TestValidateFlagsWhatItCannotVouchFor runs validate on the bridge mode
// with a throughput threshold of zero, which no two engines meet: it must
// print every check with its ratio and per-turn interval, flag the
// throughput, hold both engines' bytes to the interface counters, pin the
// engines, and exit 1.
func TestValidateFlagsWhatItCannotVouchFor(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: validate creates network namespaces")
	}
	testutil.RequireTool(t, "iperf3")
	testutil.RequireTool(t, "sockperf")
	bin := buildBinary(t)
	db := filepath.Join(t.TempDir(), "v.db")
	cmd := exec.Command(bin, "validate", "--modes", "bridge", "--samples", "2", "--max-samples", "2", "--duration", "1s",
		"--throughput-threshold", "0", "--db", db, "--quiet")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String()
	t.Logf("validate:\n%s%s", out, stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != 1 || err == nil {
		t.Fatalf("exit %d, want 1 for a zero threshold", code)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		for _, what := range []string{"throughput native/iperf3", "tcp mean round trip native/sockperf", "udp mean round trip native/sockperf", "received bytes/wire payload, native", "received bytes/wire payload, iperf3"} {
			if strings.Contains(line, what) {
				rows[what] = line
			}
		}
	}
	if len(rows) != 5 {
		t.Fatalf("%d of 5 checks printed", len(rows))
	}
	interval := regexp.MustCompile(`\[-?\d+\.\d{3}, \d+\.\d{3}\]`)
	if r := rows["throughput native/iperf3"]; !strings.Contains(r, "DISAGREE") || !interval.MatchString(r) {
		t.Errorf("throughput row not flagged with its interval: %s", r)
	}
	for _, what := range []string{"tcp mean round trip native/sockperf", "udp mean round trip native/sockperf"} {
		if r := rows[what]; !interval.MatchString(r) {
			t.Errorf("round-trip row without its interval: %s", r)
		}
	}
	for _, e := range []string{"native", "iperf3"} {
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
