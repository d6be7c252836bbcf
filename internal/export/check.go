package export

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"cnbench/internal/model"
)

// maxMagnitude bounds every value in an export: no figure cnbench
// measures comes near it (a terabit per second for an hour is 4.5e14
// bytes), and charts and statistics over larger ones overflow.
const maxMagnitude = 1e18

// requireFields checks, before decoding, that the document holds what an
// export must: a run with its status, and cases with their status and
// samples. Decoding alone would take a missing field for an empty one.
func requireFields(doc map[string]json.RawMessage) error {
	for _, k := range []string{"run", "cases"} {
		if _, ok := doc[k]; !ok {
			return fmt.Errorf("%w: no %q field", ErrNotExport, k)
		}
	}
	var run map[string]json.RawMessage
	if err := json.Unmarshal(doc["run"], &run); err != nil {
		return fmt.Errorf("%w: run: %v", ErrNotExport, err)
	}
	for _, k := range []string{"status", "started"} {
		if _, ok := run[k]; !ok {
			return fmt.Errorf("%w: run: no %q field", ErrNotExport, k)
		}
	}
	var cases []map[string]json.RawMessage
	if err := json.Unmarshal(doc["cases"], &cases); err != nil {
		return fmt.Errorf("%w: cases: %v", ErrNotExport, err)
	}
	for i, c := range cases {
		for _, k := range []string{"key", "mode", "workload", "engine", "status", "samples"} {
			if _, ok := c[k]; !ok {
				return fmt.Errorf("%w: cases[%d]: no %q field", ErrNotExport, i, k)
			}
		}
	}
	return nil
}

// checkValues refuses duplicated cases, statuses cnbench never writes,
// and sample values no measurement gives: not finite, beyond
// maxMagnitude, or below zero where only counts and rates belong.
func checkValues(f *File) error {
	seen := map[string]int{}
	for i, c := range f.Cases {
		id := c.Key + "/" + c.Engine
		if j, dup := seen[id]; dup {
			return fmt.Errorf("%w: cases[%d] repeats cases[%d] (%s)", ErrNotExport, i, j, id)
		}
		seen[id] = i
		switch c.Status {
		case model.StatusOK, model.StatusFailed, model.StatusSkipped, model.StatusPending:
		default:
			return fmt.Errorf("%w: cases[%d].status: %q is not ok, failed, skipped or pending", ErrNotExport, i, c.Status)
		}
		for j, s := range c.Samples {
			for name, v := range s.Values {
				if msg := implausible(name, v); msg != "" {
					return fmt.Errorf("%w: cases[%d].samples[%d].values.%s: %v %s", ErrNotExport, i, j, name, v, msg)
				}
			}
		}
	}
	return nil
}

func implausible(name string, v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "is not a finite number"
	case math.Abs(v) > maxMagnitude:
		return fmt.Sprintf("is beyond %g, more than any measurement gives", maxMagnitude)
	case v < 0 && nonNegative(name):
		return "is below zero"
	}
	return ""
}

// nonNegative reports whether a metric is a count, a rate or a latency.
func nonNegative(name string) bool {
	switch name {
	case model.ThroughputBPS, model.TransactionsPerS, model.SentBytes, model.ReceivedBytes:
		return true
	}
	return strings.HasPrefix(name, "latency_") || strings.HasPrefix(name, "rtt_")
}
