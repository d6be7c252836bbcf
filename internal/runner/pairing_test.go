package runner

import (
	"slices"
	"testing"
	"time"

	"cnbench/internal/model"
)

// sampleModes lists the modes of a run's samples in the order they were
// taken.
func sampleModes(res *model.RunResult) []string {
	type taken struct {
		at   time.Time
		mode string
	}
	var all []taken
	for _, c := range res.Cases {
		for _, s := range c.Samples {
			all = append(all, taken{s.Started, c.Mode})
		}
	}
	slices.SortFunc(all, func(a, b taken) int { return a.at.Compare(b.at) })
	modes := make([]string, len(all))
	for i, s := range all {
		modes[i] = s.mode
	}
	return modes
}

const pairingDoc = `
name: pairing
duration: 200ms
warmup: 0s
samples: 3
modes: [host, bridge]
topologies: [chc]
workloads:
  - {type: tcp_rr, request_size: 64, response_size: 64}
`

// TestModesTakeTurnsWhenPaired runs host and bridge paired: every round
// of two samples holds one of each mode, so the modes alternate within
// the run, each on its own path built once; unpaired, each case takes
// its samples in a row.
func TestModesTakeTurnsWhenPaired(t *testing.T) {
	r, st := newTestRunner(t)
	r.opts.Pairing = true
	res := runDoc(t, r, st, "pairing.yaml", pairingDoc)
	for _, c := range res.Cases {
		if c.Status != model.StatusOK || len(c.Samples) != 3 || !c.Outcome.Paired {
			t.Fatalf("%s: %s %s, %d samples, paired %v", c.Key, c.Status, c.Reason, len(c.Samples), c.Outcome.Paired)
		}
	}
	modes := sampleModes(res)
	t.Logf("paired: %v", modes)
	for k := 0; k+1 < len(modes); k += 2 {
		if modes[k] == modes[k+1] {
			t.Errorf("round %d took %s twice: %v", k/2, modes[k], modes)
		}
	}

	r2, st2 := newTestRunner(t)
	r2.opts.Order = OrderSequential
	res = runDoc(t, r2, st2, "pairing.yaml", pairingDoc)
	for _, c := range res.Cases {
		if c.Outcome.Paired {
			t.Errorf("%s: paired in an unpaired run", c.Key)
		}
	}
	modes = sampleModes(res)
	t.Logf("unpaired: %v", modes)
	if want := []string{"host", "host", "host", "bridge", "bridge", "bridge"}; !slices.Equal(modes, want) {
		t.Errorf("unpaired, in sequence: %v, want %v", modes, want)
	}
}
