package report

import (
	"encoding/json"
	"time"

	"cnbench/internal/model"
)

// The types below fix the JSON layout, cnbench's machine interface. They
// are separate from Report so that the Go API can evolve without changing
// what scripts read.

type jsonReport struct {
	Run   jsonRun    `json:"run"`
	Cases []jsonCase `json:"cases"`
}

type jsonRun struct {
	ID       int64      `json:"id"`
	Scenario string     `json:"scenario"`
	Started  time.Time  `json:"started"`
	Finished *time.Time `json:"finished"` // null while running
	Status   string     `json:"status"`
	Seed     int64      `json:"seed"`
	// Environment is the model's own encoding of the machine fingerprint.
	Environment model.Environment `json:"environment"`
}

type jsonCase struct {
	Index       int                   `json:"index"`
	Key         string                `json:"key"`
	Mode        string                `json:"mode"`
	Topology    string                `json:"topology"`
	Workload    string                `json:"workload"`
	Params      model.Params          `json:"params"`
	Engine      string                `json:"engine"`
	Status      model.Status          `json:"status"`
	Reason      string                `json:"reason,omitempty"`
	Outcome     model.Outcome         `json:"outcome,omitzero"`
	Metrics     map[string]jsonMetric `json:"metrics"`
	OverheadPct map[string]float64    `json:"overhead_pct,omitempty"`
	VsHostPct   map[string]float64    `json:"vs_host_pct,omitempty"`
	VsHostRatio map[string]jsonChange `json:"vs_host_ratio,omitempty"`
	Explanation *Explanation          `json:"explanation,omitempty"`
}

// jsonChange is a metric of a case against its host case.
type jsonChange struct {
	Ratio          float64 `json:"ratio"`
	CI95Low        float64 `json:"ci95_low"`
	CI95High       float64 `json:"ci95_high"`
	ChangePct      float64 `json:"change_pct"`
	ChangeCI95Low  float64 `json:"change_ci95_low"`
	ChangeCI95High float64 `json:"change_ci95_high"`
	N              int     `json:"n"`
	Paired         bool    `json:"paired"`
	Verdict        Verdict `json:"verdict"`
}

type jsonMetric struct {
	Mean     float64 `json:"mean"`
	Stddev   float64 `json:"stddev"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	CI95Low  float64 `json:"ci95_low"`
	CI95High float64 `json:"ci95_high"`
	N        int     `json:"n"`
	Unit     string  `json:"unit"`
}

// MarshalJSON encodes the report in cnbench's stable JSON layout.
func (r Report) MarshalJSON() ([]byte, error) {
	return json.Marshal(r.toJSON())
}

func (r *Report) toJSON() jsonReport {
	out := jsonReport{
		Run: jsonRun{
			ID: r.Run.ID, Scenario: r.Run.Scenario, Started: r.Run.Started,
			Status: r.Run.Status, Seed: r.Run.Seed, Environment: r.Run.Env,
		},
		Cases: make([]jsonCase, 0, len(r.Cases)),
	}
	if !r.Run.Finished.IsZero() {
		finished := r.Run.Finished
		out.Run.Finished = &finished
	}
	for _, c := range r.Cases {
		jc := jsonCase{
			Index: c.Index, Key: c.Key, Mode: c.Mode, Topology: c.Topology, Workload: c.Workload,
			Params: c.Params, Engine: c.Engine, Status: c.Status, Reason: c.Reason, Outcome: c.Outcome,
			Metrics:     make(map[string]jsonMetric, len(c.Metrics)),
			OverheadPct: c.OverheadPct,
			VsHostPct:   c.VsHostPct,
			Explanation: c.Explanation,
		}
		for name, ch := range c.VsHost {
			if jc.VsHostRatio == nil {
				jc.VsHostRatio = make(map[string]jsonChange, len(c.VsHost))
			}
			pct, low, high := ch.Pct()
			jc.VsHostRatio[name] = jsonChange{
				Ratio: ch.Ratio.Ratio, CI95Low: ch.CI95Low, CI95High: ch.CI95High,
				ChangePct: pct, ChangeCI95Low: low, ChangeCI95High: high,
				N: ch.N, Paired: ch.Paired, Verdict: ch.Verdict,
			}
		}
		for name, s := range c.Metrics {
			jc.Metrics[name] = jsonMetric{
				Mean: s.Mean, Stddev: s.Stddev, Min: s.Min, Max: s.Max,
				CI95Low: s.CI95Low, CI95High: s.CI95High, N: s.N,
				Unit: model.Metrics[name].Unit,
			}
		}
		out.Cases = append(out.Cases, jc)
	}
	return out
}
