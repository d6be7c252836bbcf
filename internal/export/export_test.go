package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"cnbench/internal/model"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestReadVersion1(t *testing.T) {
	res, err := ReadFile("testdata/run-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.ID != 4 || res.Run.Scenario != "quick" || res.Run.Env.CPUModel != "AMD EPYC 7302P" {
		t.Errorf("run = %+v", res.Run)
	}
	if !strings.Contains(res.Run.ScenarioDoc, "modes: [host, bridge]") {
		t.Errorf("scenario = %q", res.Run.ScenarioDoc)
	}
	if len(res.Cases) != 3 || res.Cases[2].Status != model.StatusSkipped || res.Cases[2].Reason != "macvlan: no parent" {
		t.Fatalf("cases = %+v", res.Cases)
	}
	if got := res.Cases[0].Samples[1]; got.Values[model.ThroughputBPS] != 3.2e10 || got.Duration != 2*time.Second {
		t.Errorf("sample = %+v", got)
	}
	h, err := hdrhistogram.Decode(res.Cases[1].Samples[0].Latency)
	if err != nil {
		t.Fatalf("latency histogram did not survive: %v", err)
	}
	if h.TotalCount() != 100 {
		t.Errorf("histogram holds %d values, want 100", h.TotalCount())
	}
}

func TestVersion1IsUpgraded(t *testing.T) {
	raw, err := openFixture(t)
	if err != nil {
		t.Fatal(err)
	}
	_, f, err := Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != Version {
		t.Errorf("upgraded version = %d, want %d", f.Version, Version)
	}
	want := map[string]Metric{
		model.ThroughputBPS: {"bit/s", true}, model.CPUSenderPct: {"% of one core", false},
		model.TransactionsPerS: {"1/s", true}, model.LatencyP99US: {"us", false},
	}
	if !reflect.DeepEqual(f.Metrics, want) {
		t.Errorf("metrics = %v, want %v", f.Metrics, want)
	}
}

// TestVersion2IsUpgraded reads a version 2 export, whose cases kept
// their outcome among their params, and holds the upgraded document to
// testdata/run-v2-upgraded.json (go test -update rewrites it).
func TestVersion2IsUpgraded(t *testing.T) {
	raw, err := os.ReadFile("testdata/run-v2.json")
	if err != nil {
		t.Fatal(err)
	}
	res, f, err := Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != Version || f.Generator != "cnbench 0.2.0" || !f.Exported.Equal(time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("head = version %d, generator %q, exported %v", f.Version, f.Generator, f.Exported)
	}
	want := []model.Outcome{{StoppedBy: "target_ci", Retaken: 1}, {StoppedBy: "max_samples"}, {}}
	if len(res.Cases) != len(want) {
		t.Fatalf("%d cases, want %d", len(res.Cases), len(want))
	}
	for i, w := range want {
		if got := res.Cases[i].Outcome; got != w {
			t.Errorf("case %d: outcome %+v, want %+v", i, got, w)
		}
	}
	if p := res.Cases[0].Params; p.TargetCIPct != 2 || p.MaxSamples != 3 || p.MaxStealPct != 2 || p.Samples != 2 {
		t.Errorf("case 0: params %+v lost what the case was asked", p)
	}
	if n := len(res.Cases[1].Samples); n != 3 {
		t.Errorf("case 1: %d samples, want 3", n)
	}

	got, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	const golden = "testdata/run-v2-upgraded.json"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantDoc, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wantDoc) {
		t.Errorf("upgraded version 2 export differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
}

func TestRoundTrip(t *testing.T) {
	res, err := ReadFile("testdata/run-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	now := time.Date(2025, 4, 1, 8, 0, 0, 0, time.UTC)
	if err := Write(&b, res, now); err != nil {
		t.Fatal(err)
	}
	var head map[string]any
	if err := json.Unmarshal(b.Bytes(), &head); err != nil {
		t.Fatal(err)
	}
	if head["format"] != FormatName || head["version"] != float64(Version) || head["exported"] != "2025-04-01T08:00:00Z" {
		t.Errorf("head = format %v version %v exported %v", head["format"], head["version"], head["exported"])
	}
	again, _, err := Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, res) {
		t.Errorf("round trip changed the run:\n got %+v\nwant %+v", again, res)
	}
}

func TestRefusesNewerVersion(t *testing.T) {
	_, _, err := Read(strings.NewReader(`{"format": "cnbench-run", "version": 99, "run": {}, "cases": []}`))
	if !errors.Is(err, ErrTooNew) {
		t.Fatalf("Read of version 99: %v, want ErrTooNew", err)
	}
	for _, want := range []string{"99", "newer cnbench"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestRefusesOtherFiles(t *testing.T) {
	for _, doc := range []string{`{"run": {"id": 1}}`, `[1, 2]`, `not json`, `{"format": "cnbench-run", "version": 0}`,
		`{"format": "flent", "version": 1}`} {
		if _, _, err := Read(strings.NewReader(doc)); !errors.Is(err, ErrNotExport) {
			t.Errorf("Read(%s) = %v, want ErrNotExport", doc, err)
		}
	}
}

func openFixture(t *testing.T) ([]byte, error) {
	t.Helper()
	return os.ReadFile("testdata/run-v1.json")
}
