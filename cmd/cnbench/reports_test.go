package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cnbench/internal/model"
	"cnbench/internal/store"
)

// storeRun records a finished run of host and bridge TCP throughput with
// the given per-sample Gbit/s, as the runner would, and returns its id.
func storeRun(t *testing.T, st *store.Store, started time.Time, host, bridge []float64) int64 {
	t.Helper()
	run := &model.Run{Scenario: "gate", ScenarioDoc: "name: gate\n", Started: started, Status: "running",
		Env: model.Environment{Hostname: "ci-1", Kernel: "6.1.0", Cores: 2}}
	if err := st.CreateRun(run); err != nil {
		t.Fatal(err)
	}
	params := model.Params{Flows: 1, MsgSize: 128 << 10, Samples: len(host)}
	cases := []model.Case{
		{Index: 0, Key: "host/chc/tcp_stream", Mode: "host", Topology: "chc", Workload: "tcp_stream", Engine: "native", Params: params, Status: model.StatusPending},
		{Index: 1, Key: "bridge/chc/tcp_stream", Mode: "bridge", Topology: "chc", Workload: "tcp_stream", Engine: "native", Params: params, Status: model.StatusPending},
		{Index: 2, Key: "macvlan/chc/tcp_stream", Mode: "macvlan", Topology: "chc", Workload: "tcp_stream", Engine: "native", Params: params, Status: model.StatusPending},
	}
	if err := st.AddCases(run.ID, cases); err != nil {
		t.Fatal(err)
	}
	for i, gbps := range [][]float64{host, bridge} {
		for j, g := range gbps {
			smp := model.Sample{Index: j, Started: started.Add(time.Duration(j) * time.Second), Duration: time.Second,
				Values: map[string]float64{model.ThroughputBPS: g * 1e9, model.CPUSPerGB: 1.5, model.CPUSenderPct: 60}}
			if err := st.AddSample(cases[i].ID, smp); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.SetCaseStatus(cases[i].ID, model.StatusOK, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetCaseStatus(cases[2].ID, model.StatusSkipped, "macvlan: no parent interface"); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishRun(run.ID, "done", started.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return run.ID
}

// gateDB holds run 1 and run 2, in which bridge throughput drops by a
// quarter while host stays within its noise.
func gateDB(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "results.db")
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	day := time.Date(2025, 5, 2, 10, 0, 0, 0, time.UTC)
	storeRun(t, st, day, []float64{9.40, 9.42, 9.41}, []float64{8.1, 8.2, 8.3})
	storeRun(t, st, day.Add(24*time.Hour), []float64{9.41, 9.40, 9.43}, []float64{6.1, 6.2, 6.15})
	return db
}

func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = execute(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCompareExitCodeFollowsFailOnRegression(t *testing.T) {
	db := gateDB(t)
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no gate", nil, exitOK},
		{"regression beyond the limit", []string{"--fail-on-regression", "10"}, exitRegression},
		{"regression within the limit", []string{"--fail-on-regression", "30"}, exitOK},
		{"bad limit", []string{"--fail-on-regression", "-1"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := cli(t, append([]string{"compare", "1", "2", "--db", db}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errOut)
			}
			if tt.code == exitUsage {
				return
			}
			if !strings.Contains(out, "bridge/chc/tcp_stream") || !strings.Contains(out, "worse") {
				t.Errorf("output lacks the bridge regression:\n%s", out)
			}
			if tt.code == exitRegression && !strings.Contains(errOut, "bridge/chc/tcp_stream throughput_bps") {
				t.Errorf("stderr does not name the regression: %s", errOut)
			}
		})
	}
}

func TestCompareJSONVerdicts(t *testing.T) {
	code, out, errOut := cli(t, "compare", "1", "2", "--db", gateDB(t), "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Rows []struct {
			Key, Metric, Verdict string
		}
		NotCompared []string `json:"not_compared"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, r := range doc.Rows {
		verdicts[r.Key+" "+r.Metric] = r.Verdict
	}
	if verdicts["bridge/chc/tcp_stream throughput_bps"] != "worse" || verdicts["host/chc/tcp_stream throughput_bps"] != "no significant change" {
		t.Errorf("verdicts = %v", verdicts)
	}
	if len(doc.NotCompared) != 1 {
		t.Errorf("not compared = %v, want the skipped macvlan case", doc.NotCompared)
	}
}

func TestRunsNewestFirst(t *testing.T) {
	code, out, errOut := cli(t, "runs", "--db", gateDB(t))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "2 ") || !strings.HasPrefix(lines[2], "1 ") {
		t.Fatalf("runs output:\n%s", out)
	}
	for _, want := range []string{"gate", "done", "1m0s", "3 (2 ok, 1 skipped)"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("line %q lacks %q", lines[1], want)
		}
	}
}

// An exported run must stand in for the database everywhere a run
// number is taken.
func TestExportedFileStandsInForTheDatabase(t *testing.T) {
	db := gateDB(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "run2.json")
	if code, _, errOut := cli(t, "export", "2", "--db", db, "-o", file); code != exitOK {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	_, fromDB, _ := cli(t, "report", "2", "--db", db, "--format", "json")
	code, fromFile, errOut := cli(t, "report", file, "--format", "json")
	if code != exitOK || fromFile != fromDB {
		t.Errorf("report of the export (exit %d, %s) differs from the database's:\n%s\n%s", code, errOut, fromFile, fromDB)
	}
	if code, _, errOut := cli(t, "compare", "1", file, "--db", db, "--fail-on-regression", "10"); code != exitRegression {
		t.Errorf("compare against the export: exit %d, want %d: %s", code, exitRegression, errOut)
	}
	svg := filepath.Join(dir, "bars.svg")
	if code, _, errOut := cli(t, "plot", file, "--kind", "bars", "-o", svg); code != exitOK {
		t.Fatalf("plot: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(svg); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("plot wrote %.100q, %v", b, err)
	}
	html := filepath.Join(dir, "report.html")
	if code, _, errOut := cli(t, "report", file, "--format", "html", "-o", html); code != exitOK {
		t.Fatalf("html report: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte(`id="chart-bars-tcp_stream"`)) {
		t.Errorf("html report lacks the bars chart (%v)", err)
	}
}

func TestPlotUsageErrors(t *testing.T) {
	db := gateDB(t)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"plot", "--db", db, "-o", "x.svg"}, exitUsage, "--kind is required"},
		{[]string{"plot", "--db", db, "--kind", "pie", "-o", "x.svg"}, exitUsage, "cdf"},
		{[]string{"plot", "--db", db, "--kind", "bars", "-o", "x.jpg"}, exitUsage, ".png"},
		{[]string{"plot", "--db", db, "--kind", "flows", "-o", filepath.Join(t.TempDir(), "x.svg")}, exitFailure, "several --flows"},
	}
	for _, tt := range tests {
		code, _, errOut := cli(t, tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", tt.args, code, errOut, tt.code, tt.want)
		}
	}
}

func TestNewerExportIsRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "future.json")
	if err := os.WriteFile(file, []byte(`{"format": "cnbench-run", "version": 999, "run": {}, "cases": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := cli(t, "report", file)
	if code == exitOK || !strings.Contains(errOut, "newer cnbench") {
		t.Errorf("report of a future export: exit %d, %q", code, errOut)
	}
}
