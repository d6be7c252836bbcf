package store

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"cnbench/internal/model"
)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// openWithRun opens a temporary database holding one new run of the
// named scenario.
func openWithRun(t *testing.T, scenario string) (*Store, *model.Run) {
	t.Helper()
	s, _ := openTemp(t)
	run := newRun(scenario, 0)
	if err := s.CreateRun(run); err != nil {
		t.Fatal(err)
	}
	return s, run
}

// started gives distinct times with a non-UTC zone and nanoseconds, the
// parts a careless time encoding would lose.
func started(minute int) time.Time {
	zone := time.FixedZone("CET", 3600)
	return time.Date(2025, 3, 14, 9, minute, 7, 123456789, zone)
}

func newRun(scenario string, minute int) *model.Run {
	return &model.Run{
		Scenario:    scenario,
		ScenarioDoc: "name: " + scenario + "\n",
		Started:     started(minute),
		Status:      "running",
		Seed:        42,
		Order:       model.OrderSequential,
		Env: model.Environment{
			Hostname: "bench-1", Kernel: "6.8.0", CPUModel: "EPYC", Cores: 32, NUMANodes: 2,
			MemoryMB: 65536, Version: "0.1.0", GoVersion: "go1.26.8",
			Tools: map[string]string{"iperf3": "iperf 3.16"},
		},
	}
}

func testCases() []model.Case {
	return []model.Case{
		{Index: 0, Key: "host/direct/tcp_stream/f1", Mode: "host", Topology: "direct", Workload: "tcp_stream",
			Engine: "iperf3", Params: model.Params{Flows: 1, MsgSize: 131072, DurationMS: 10000}, Status: model.StatusPending},
		{Index: 1, Key: "bridge/direct/tcp_rr", Mode: "bridge", Topology: "direct", Workload: "tcp_rr",
			Engine: "netperf", Params: model.Params{RequestSize: 64, ResponseSize: 64}, Status: model.StatusPending},
		{Index: 2, Key: "macvlan/direct/tcp_stream", Mode: "macvlan", Topology: "direct", Workload: "tcp_stream",
			Engine: "iperf3", Params: model.Params{Flows: 4}, Status: model.StatusSkipped, Reason: "no macvlan support"},
	}
}

func TestRoundTrip(t *testing.T) {
	s, run := openWithRun(t, "bridge-vs-host")
	if run.ID == 0 {
		t.Fatal("CreateRun did not set the id")
	}
	cases := testCases()
	if err := s.AddCases(run.ID, cases); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if c.ID == 0 {
			t.Fatalf("case %d has no id", i)
		}
	}
	samples := []model.Sample{
		{Index: 0, Started: started(1), Duration: 10 * time.Second,
			Values:    map[string]float64{model.ThroughputBPS: 9.41e9, model.CPUSenderPct: 87.5},
			Intervals: []model.Interval{{StartMS: 0, EndMS: 1000, Bytes: 1176250000, BPS: 9.41e9}}},
		{Index: 1, Started: started(2), Duration: 10 * time.Second,
			Values: map[string]float64{model.ThroughputBPS: 9.38e9, model.CPUSenderPct: 86}},
	}
	// Out of order on purpose: loading must sort by index.
	for _, i := range []int{1, 0} {
		if err := s.AddSample(cases[0].ID, samples[i]); err != nil {
			t.Fatal(err)
		}
	}
	rr := model.Sample{Index: 0, Started: started(3), Duration: 5 * time.Second,
		Values: map[string]float64{model.TransactionsPerS: 25000}, Latency: []byte("HISTFAAAA-opaque")}
	if err := s.AddSample(cases[1].ID, rr); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCaseStatus(cases[0].ID, model.StatusOK, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCaseStatus(cases[1].ID, model.StatusFailed, "netperf exited 1"); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(run.ID, "done", started(9)); err != nil {
		t.Fatal(err)
	}

	got, err := s.LoadRun(run.ID)
	if err != nil {
		t.Fatal(err)
	}

	wantRun := *run
	wantRun.Status = "done"
	wantRun.Finished = started(9)
	cases[0].Status = model.StatusOK
	cases[1].Status, cases[1].Reason = model.StatusFailed, "netperf exited 1"
	want := &model.RunResult{Run: wantRun, Cases: []model.CaseResult{
		{Case: cases[0], Samples: samples},
		{Case: cases[1], Samples: []model.Sample{rr}},
		{Case: cases[2]},
	}}
	normalizeTimes(want)
	normalizeTimes(got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadRun mismatch\n got: %+v\nwant: %+v", got, want)
	}
}

// normalizeTimes puts every time in UTC: the store keeps instants, not
// zones.
func normalizeTimes(r *model.RunResult) {
	r.Run.Started = r.Run.Started.UTC()
	r.Run.Finished = r.Run.Finished.UTC()
	for i := range r.Cases {
		for j := range r.Cases[i].Samples {
			r.Cases[i].Samples[j].Started = r.Cases[i].Samples[j].Started.UTC()
		}
	}
}

func TestUnfinishedRunHasZeroFinish(t *testing.T) {
	s, run := openWithRun(t, "x")
	got, err := s.LoadRun(run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Run.Finished.IsZero() {
		t.Fatalf("Finished = %v, want zero", got.Run.Finished)
	}
	if len(got.Cases) != 0 {
		t.Fatalf("Cases = %v, want none", got.Cases)
	}
}

func TestNotFound(t *testing.T) {
	s, _ := openTemp(t)
	if _, err := s.LatestRunID(); !errors.Is(err, ErrNoRuns) {
		t.Errorf("LatestRunID on empty store: %v, want ErrNoRuns", err)
	}
	if _, err := s.LoadRun(7); !errors.Is(err, ErrRunNotFound) {
		t.Errorf("LoadRun(7): %v, want ErrRunNotFound", err)
	}
	if err := s.FinishRun(7, "done", time.Now()); !errors.Is(err, ErrRunNotFound) {
		t.Errorf("FinishRun(7): %v, want ErrRunNotFound", err)
	}
	if err := s.AddCases(7, testCases()); !errors.Is(err, ErrRunNotFound) {
		t.Errorf("AddCases(7): %v, want ErrRunNotFound", err)
	}
	if err := s.SetCaseStatus(7, model.StatusOK, ""); !errors.Is(err, ErrCaseNotFound) {
		t.Errorf("SetCaseStatus(7): %v, want ErrCaseNotFound", err)
	}
	if err := s.AddSample(7, model.Sample{}); !errors.Is(err, ErrCaseNotFound) {
		t.Errorf("AddSample(7): %v, want ErrCaseNotFound", err)
	}
}

func TestAddCasesIsAllOrNothing(t *testing.T) {
	s, run := openWithRun(t, "x")
	cases := testCases()
	cases[2].Index = cases[0].Index // violates UNIQUE (run, case index)
	if err := s.AddCases(run.ID, cases); err == nil {
		t.Fatal("AddCases with a duplicate index succeeded")
	}
	for i, c := range cases {
		if c.ID != 0 {
			t.Errorf("case %d got id %d from a rolled-back transaction", i, c.ID)
		}
	}
	got, err := s.LoadRun(run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Cases) != 0 {
		t.Fatalf("%d cases stored after a failed AddCases", len(got.Cases))
	}
}

func TestDuplicateSampleIndexIsRejected(t *testing.T) {
	s, run := openWithRun(t, "x")
	cases := testCases()
	if err := s.AddCases(run.ID, cases); err != nil {
		t.Fatal(err)
	}
	smp := model.Sample{Index: 3, Started: started(1), Values: map[string]float64{model.ThroughputBPS: 1}}
	if err := s.AddSample(cases[0].ID, smp); err != nil {
		t.Fatal(err)
	}
	if err := s.AddSample(cases[0].ID, smp); err == nil {
		t.Fatal("second sample with the same index was accepted")
	}
}

func TestNonFiniteValueIsRejectedByName(t *testing.T) {
	s, run := openWithRun(t, "x")
	cases := testCases()
	if err := s.AddCases(run.ID, cases); err != nil {
		t.Fatal(err)
	}
	err := s.AddSample(cases[0].ID, model.Sample{Values: map[string]float64{model.CPUSenderPct: math.NaN()}})
	if err == nil || !strings.Contains(err.Error(), model.CPUSenderPct) {
		t.Fatalf("AddSample with NaN: %v, want an error naming %s", err, model.CPUSenderPct)
	}
}

func TestSampleVisibleFromSecondStore(t *testing.T) {
	writer, path := openTemp(t)
	run := newRun("x", 0)
	if err := writer.CreateRun(run); err != nil {
		t.Fatal(err)
	}
	cases := testCases()
	if err := writer.AddCases(run.ID, cases); err != nil {
		t.Fatal(err)
	}
	reader, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()

	smp := model.Sample{Index: 0, Started: started(1), Values: map[string]float64{model.ThroughputBPS: 5e9}}
	if err := writer.AddSample(cases[0].ID, smp); err != nil {
		t.Fatal(err)
	}
	// The writer stays open: the sample must already be in the WAL, not in
	// anything that Close would flush.
	got, err := reader.LoadRun(run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Cases[0].Samples); n != 1 {
		t.Fatalf("reader sees %d samples, want 1", n)
	}
	if v := got.Cases[0].Samples[0].Values[model.ThroughputBPS]; v != 5e9 {
		t.Fatalf("reader sees throughput %v, want 5e9", v)
	}
}

func TestConcurrentWriters(t *testing.T) {
	first, path := openTemp(t)
	second, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	run := newRun("x", 0)
	if err := first.CreateRun(run); err != nil {
		t.Fatal(err)
	}
	cases := testCases()
	if err := first.AddCases(run.ID, cases); err != nil {
		t.Fatal(err)
	}

	const perWriter = 50
	writers := []struct {
		store  *Store
		caseID int64
	}{
		{first, cases[0].ID}, {second, cases[1].ID},
		// Two goroutines on one Store exercise its connection pool too.
		{first, cases[2].ID},
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(writers)*perWriter)
	for _, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				smp := model.Sample{Index: i, Started: started(1), Values: map[string]float64{model.ThroughputBPS: float64(i)}}
				if err := w.store.AddSample(w.caseID, smp); err != nil {
					errs <- fmt.Errorf("case %d sample %d: %w", w.caseID, i, err)
				}
				// A reader in the mix must not block writers either.
				if _, err := w.store.LoadRun(run.ID); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := second.LoadRun(run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got.Cases {
		if len(c.Samples) != perWriter {
			t.Errorf("case %d has %d samples, want %d", c.Index, len(c.Samples), perWriter)
		}
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	s, path := openTemp(t)
	if _, err := s.db.Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	s.Close()

	_, err := Open(path)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprint(schemaVersion+1)) {
		t.Errorf("error %q does not name the file's schema version", err)
	}
}

func TestOpenSetsPragmasAndSchema(t *testing.T) {
	s, path := openTemp(t)
	pragmas := map[string]string{
		"journal_mode": "wal", "busy_timeout": "10000", "foreign_keys": "1",
		"user_version": fmt.Sprint(schemaVersion),
	}
	// Several connections at once: the pragmas must hold on each, not only
	// the first the pool opened.
	conns := make([]*sql.Conn, 3)
	for i := range conns {
		c, err := s.db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	for i, c := range conns {
		for name, want := range pragmas {
			var got string
			if err := c.QueryRowContext(t.Context(), "PRAGMA "+name).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("connection %d: PRAGMA %s = %s, want %s", i, name, got, want)
			}
		}
	}
	// Reopening an up-to-date file migrates nothing and succeeds.
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
}

func TestOpenPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd dir?#%", "results.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The file must be exactly where asked, not at a path cut at '?'.
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

func TestRunsNewestFirstWithCounts(t *testing.T) {
	s, _ := openTemp(t)
	older, newer, empty := newRun("older", 0), newRun("newer", 30), newRun("empty", 10)
	for _, r := range []*model.Run{older, newer, empty} {
		if err := s.CreateRun(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddCases(older.ID, testCases()); err != nil {
		t.Fatal(err)
	}
	newerCases := testCases()
	if err := s.AddCases(newer.ID, newerCases); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCaseStatus(newerCases[0].ID, model.StatusOK, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(newer.ID, "done", started(40)); err != nil {
		t.Fatal(err)
	}

	runs, err := s.Runs()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range runs {
		names = append(names, r.Scenario)
	}
	if want := []string{"newer", "empty", "older"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("Runs order = %v, want %v", names, want)
	}
	want := RunSummary{
		ID: newer.ID, Scenario: "newer", Started: started(30).UTC(), Finished: started(40).UTC(), Status: "done",
		Cases:      map[model.Status]int{model.StatusOK: 1, model.StatusPending: 1, model.StatusSkipped: 1},
		TotalCases: 3,
	}
	if !reflect.DeepEqual(runs[0], want) {
		t.Errorf("Runs()[0] = %+v, want %+v", runs[0], want)
	}
	if runs[1].TotalCases != 0 || len(runs[1].Cases) != 0 {
		t.Errorf("run without cases summarised as %+v", runs[1])
	}
	if got := runs[2].Cases[model.StatusPending]; got != 2 {
		t.Errorf("older run has %d pending cases, want 2", got)
	}

	latest, err := s.LatestRunID()
	if err != nil {
		t.Fatal(err)
	}
	if latest != newer.ID {
		t.Errorf("LatestRunID = %d, want %d", latest, newer.ID)
	}
}

func TestCaseOutcome(t *testing.T) {
	s, run := openWithRun(t, "target")
	cases := testCases()
	cases[1].Outcome = model.Outcome{Retaken: 1}
	if err := s.AddCases(run.ID, cases); err != nil {
		t.Fatal(err)
	}
	want := model.Outcome{StoppedBy: "target_ci", Retaken: 2}
	if err := s.SetCaseOutcome(cases[0].ID, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadRun(run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cases[0].Outcome != want || got.Cases[0].Params != cases[0].Params {
		t.Errorf("case 0: outcome %+v, params %+v; want %+v, %+v", got.Cases[0].Outcome, got.Cases[0].Params, want, cases[0].Params)
	}
	if o := got.Cases[1].Outcome; o != (model.Outcome{Retaken: 1}) {
		t.Errorf("case 1: outcome %+v, want the one it was added with", o)
	}
	if o := got.Cases[2].Outcome; o != (model.Outcome{}) {
		t.Errorf("case 2: outcome %+v, want none", o)
	}
	if err := s.SetCaseOutcome(9999, want); !errors.Is(err, ErrCaseNotFound) {
		t.Errorf("SetCaseOutcome of a missing case: %v, want ErrCaseNotFound", err)
	}
}

// TestMigratesOutcomeOutOfParams opens a database of schema version 2,
// whose cases kept stopped_by and retaken among their parameters.
func TestMigratesOutcomeOutOfParams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations[:2] {
		if _, err := db.Exec(m); err != nil {
			t.Fatal(err)
		}
	}
	_, err = db.Exec(`PRAGMA user_version = 2;
INSERT INTO runs (id, scenario, scenario_yaml, started, status, seed, environment)
	VALUES (1, 'old', 'name: old', '2025-03-14T08:00:00.000000000Z', 'done', 0, '{}');
INSERT INTO cases (run_id, case_index, key, mode, topology, workload, engine, params, status) VALUES
	(1, 0, 'a', 'host', 'chc', 'tcp_stream', 'native', '{"flows":1,"samples":2,"target_ci_pct":2,"stopped_by":"max_samples","retaken":3}', 'ok'),
	(1, 1, 'b', 'veth', 'chc', 'tcp_stream', 'native', '{"flows":1,"retaken":1}', 'ok'),
	(1, 2, 'c', 'bridge', 'chc', 'tcp_stream', 'native', '{"flows":1}', 'ok');`)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	res, err := s.LoadRun(1)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		params  model.Params
		outcome model.Outcome
	}{
		{model.Params{Flows: 1, Samples: 2, TargetCIPct: 2}, model.Outcome{StoppedBy: "max_samples", Retaken: 3}},
		{model.Params{Flows: 1}, model.Outcome{Retaken: 1}},
		{model.Params{Flows: 1}, model.Outcome{}},
	}
	if len(res.Cases) != len(want) {
		t.Fatalf("%d cases, want %d", len(res.Cases), len(want))
	}
	for i, w := range want {
		if c := res.Cases[i]; c.Params != w.params || c.Outcome != w.outcome {
			t.Errorf("case %d: params %+v, outcome %+v; want %+v, %+v", i, c.Params, c.Outcome, w.params, w.outcome)
		}
	}
	var params string
	if err := s.db.QueryRow(`SELECT params FROM cases WHERE case_index = 0`).Scan(&params); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(params, "stopped_by") || strings.Contains(params, "retaken") {
		t.Errorf("migrated params still hold the outcome: %s", params)
	}
}
