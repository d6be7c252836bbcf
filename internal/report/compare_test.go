package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"cnbench/internal/model"
)

// comparedRuns gives the golden fixture and a later run of it in which
// bridge throughput clearly regresses, host throughput moves within its
// noise, and a case appears that the first run did not have.
func comparedRuns(t *testing.T) (a, b *model.RunResult) {
	t.Helper()
	a, b = fixture(t), fixture(t)
	b.Run.ID, b.Run.Started = 8, at(30, 0)
	b.Cases[0].Samples = streamSamples([]float64{9.43, 9.39, 9.41}, []float64{61, 62, 60}, []float64{70, 71, 72})
	b.Cases[1].Samples = streamSamples([]float64{6.10, 6.31, 6.25}, []float64{75, 77, 74}, []float64{88, 90, 89})
	b.Cases[3].Samples = rrSamples(t, []float64{28500, 28900, 28300}, 33, 47)
	extra := b.Cases[0]
	extra.Key, extra.Index = "veth/direct/tcp_stream/flows=4,msg=131072", 6
	b.Cases = append(b.Cases, extra)
	return a, b
}

func find(t *testing.T, c *Comparison, key, metric string) ComparisonRow {
	t.Helper()
	for _, r := range c.Rows {
		if r.Key == key && r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no row for %s %s", key, metric)
	return ComparisonRow{}
}

func TestCompareVerdicts(t *testing.T) {
	a, b := comparedRuns(t)
	c := Compare(a, b, nil, 0.05)

	bridge := find(t, c, "bridge/direct/tcp_stream/flows=4,msg=131072", model.ThroughputBPS)
	if bridge.Verdict != Worse || bridge.P >= 0.01 || math.Abs(bridge.ChangePct-(-24.5)) > 1 {
		t.Errorf("bridge throughput = %+v, want a significant drop of about 24.5%%", bridge)
	}
	host := find(t, c, "host/direct/tcp_stream/flows=4,msg=131072", model.ThroughputBPS)
	if host.Verdict != NoSignificant {
		t.Errorf("host throughput = %+v, want no significant change", host)
	}
	// Lower latency and more transactions are both improvements.
	rr := find(t, c, "bridge/direct/tcp_rr/req=64,resp=64", model.TransactionsPerS)
	if rr.Verdict != Better {
		t.Errorf("bridge tx/s = %+v, want better", rr)
	}
	p50 := find(t, c, "bridge/direct/tcp_rr/req=64,resp=64", model.LatencyP50US)
	if p50.Verdict != Better || p50.ChangePct >= 0 {
		t.Errorf("bridge p50 = %+v, want better with a negative change", p50)
	}
	if len(c.OnlyB) != 1 || len(c.OnlyA) != 0 || len(c.Unmeasured) != 2 {
		t.Errorf("only A %v, only B %v, unmeasured %v", c.OnlyA, c.OnlyB, c.Unmeasured)
	}

	if got := c.Regressions(20); len(got) != 1 || got[0].Key != bridge.Key {
		t.Errorf("regressions over 20%% = %+v, want the bridge throughput", got)
	}
	if got := c.Regressions(30); len(got) != 0 {
		t.Errorf("regressions over 30%% = %+v, want none", got)
	}
}

func TestCompareWithItselfFindsNothing(t *testing.T) {
	a := fixture(t)
	for _, r := range Compare(a, a, nil, 0.05).Rows {
		if r.Verdict != NoSignificant || r.ChangePct != 0 {
			t.Errorf("%s %s against itself: %+v", r.Key, r.Metric, r)
		}
	}
}

func TestCompareGoldenFiles(t *testing.T) {
	a, b := comparedRuns(t)
	c := Compare(a, b, nil, 0.05)
	for format, ext := range map[string]string{"table": "txt", "json": "json", "markdown": "md"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteComparison(&buf, c, format); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "compare."+ext)
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/report -update to create it)", err)
			}
			if !sameUpToRounding(buf.String(), string(want)) {
				t.Errorf("%s output differs from %s (run with -update if the change is intended)\n got:\n%s\nwant:\n%s", format, path, buf.Bytes(), want)
			}
		})
	}
	if err := WriteComparison(&bytes.Buffer{}, c, "csv"); err == nil {
		t.Error("WriteComparison accepted csv")
	}
}
