package report

import (
	"bytes"
	"strings"
	"testing"

	"cnbench/internal/model"
)

func TestTCGCasesAreWarnedAbout(t *testing.T) {
	res := &model.RunResult{Cases: []model.CaseResult{
		{Case: model.Case{Mode: "bridge", Topology: "cvc", Workload: "tcp_rr", Status: model.StatusOK, Params: model.Params{Accel: "tcg"}},
			Samples: []model.Sample{{Values: map[string]float64{model.TransactionsPerS: 500}}}},
		{Case: model.Case{Mode: "bridge", Topology: "chc", Workload: "tcp_rr", Status: model.StatusOK},
			Samples: []model.Sample{{Values: map[string]float64{model.TransactionsPerS: 9000}}}},
	}}
	var b bytes.Buffer
	if err := Write(&b, Build(res), "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "TCG") || !strings.Contains(b.String(), "1 case(s)") {
		t.Errorf("table lacks the TCG warning for one case:\n%s", b.String())
	}
	res.Cases = res.Cases[1:]
	b.Reset()
	if err := Write(&b, Build(res), "table"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "TCG") {
		t.Errorf("table warns about TCG without a TCG case:\n%s", b.String())
	}
}
