package export

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"cnbench/internal/model"
)

// TestReadRefusesWhatNoRunWrites edits a real export into the files a
// probe tried: each is refused with the path of what is wrong.
func TestReadRefusesWhatNoRunWrites(t *testing.T) {
	res := &model.RunResult{
		Run: model.Run{ID: 1, Scenario: "s", Status: "done", Started: time.Unix(1e9, 0).UTC()},
		Cases: []model.CaseResult{{
			Case:    model.Case{Key: "host/chc/tcp_stream", Mode: "host", Topology: "chc", Workload: "tcp_stream", Engine: "native", Status: model.StatusOK},
			Samples: []model.Sample{{Values: map[string]float64{model.ThroughputBPS: 1e10}}},
		}},
	}
	var buf bytes.Buffer
	if err := Write(&buf, res, time.Unix(1e9, 0)); err != nil {
		t.Fatal(err)
	}
	good := buf.String()
	if _, _, err := Read(strings.NewReader(good)); err != nil {
		t.Fatalf("the export itself: %v", err)
	}
	dup := strings.Replace(good, `"cases": [`, `"cases": [`+caseOf(t, good)+`,`, 1)
	for _, tc := range []struct{ name, doc, want string }{
		{"no run", drop(t, good, `"run"`), `no "run" field`},
		{"no status", strings.Replace(good, `"status": "done",`, "", 1), `run: no "status" field`},
		{"no samples", strings.Replace(good, `"samples": [`, `"samplez": [`, 1), `cases[0]: no "samples" field`},
		{"negative throughput", strings.Replace(good, `"throughput_bps": 10000000000`, `"throughput_bps": -5`, 1), "values.throughput_bps: -5 is below zero"},
		{"near the float limit", strings.Replace(good, `"throughput_bps": 10000000000`, `"throughput_bps": 1e308`, 1), "more than any measurement gives"},
		{"duplicated case", dup, "cases[1] repeats cases[0]"},
		{"version 0", strings.Replace(good, fmt.Sprintf(`"version": %d`, Version), `"version": 0`, 1), "versions start at 1"},
	} {
		if tc.doc == good {
			t.Fatalf("%s: the edit did not apply", tc.name)
		}
		_, _, err := Read(strings.NewReader(tc.doc))
		if !errors.Is(err, ErrNotExport) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrNotExport saying %q", tc.name, err, tc.want)
		}
	}
	if testing.Verbose() {
		os.Stdout.WriteString(good)
	}
}

// drop removes a top-level field and its value from an indented export.
func drop(t *testing.T, doc, field string) string {
	t.Helper()
	i := strings.Index(doc, "\n "+field+": {") + 1
	if i < 1 {
		t.Fatalf("no %s in the export", field)
	}
	j := strings.Index(doc[i:], "\n },\n")
	return doc[:i] + doc[i+j+len("\n },\n"):]
}

// caseOf is the export's first case, as text.
func caseOf(t *testing.T, doc string) string {
	t.Helper()
	i := strings.Index(doc, `"cases": [`) + len(`"cases": [`)
	j := strings.LastIndex(doc, "]\n}")
	return strings.TrimSpace(doc[i:j])
}
