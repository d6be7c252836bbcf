package runner

import (
	"fmt"
	"io"
	"time"

	"cnbench/internal/model"
)

// progress prints one plain line per step to stderr, with the case's
// place in the run and an estimate of the time left.
type progress struct {
	w       io.Writer
	total   int
	done    int
	left    time.Duration // expected time of the cases not started yet
	planned time.Duration // expected time of the cases finished
	started time.Time
	caseAt  time.Time
}

// setupAllowance is a rough cost of building and tearing down a case's
// topology, for the estimate.
const setupAllowance = 300 * time.Millisecond

func expected(c *model.Case) time.Duration {
	return time.Duration(c.Params.WarmupMS+int64(c.Params.Samples)*c.Params.DurationMS)*time.Millisecond + setupAllowance
}

func newProgress(w io.Writer, cases []model.Case) *progress {
	p := &progress{w: w, total: len(cases), started: time.Now()}
	for i := range cases {
		p.left += expected(&cases[i])
	}
	return p
}

func (p *progress) printf(format string, args ...any) {
	if p == nil || p.w == nil {
		return
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *progress) startCase(c *model.Case) {
	p.caseAt = time.Now()
	p.left -= expected(c)
	p.printf("[%d/%d] %s (eta %s)", p.done+1, p.total, c.Key, p.eta(c).Round(time.Second))
}

// eta is the time left: this case's remaining part plus the rest, scaled
// by how the run's real pace compares with the plan so far.
func (p *progress) eta(c *model.Case) time.Duration {
	rest := expected(c) + p.left
	if p.planned <= 0 {
		return rest
	}
	pace := float64(time.Since(p.started)) / float64(p.planned)
	return time.Duration(float64(rest) * pace)
}

func (p *progress) phase(c *model.Case, what string) {
	p.printf("[%d/%d]   %s", p.done+1, p.total, what)
}

func (p *progress) sample(c *model.Case, i int) {
	p.printf("[%d/%d]   sample %d/%d", p.done+1, p.total, i+1, c.Params.Samples)
}

func (p *progress) sampleDone(c *model.Case, s model.Sample) {
	m := model.PrimaryMetric(c.Workload)
	v, ok := s.Values[m]
	if !ok {
		return
	}
	switch m {
	case model.ThroughputBPS:
		p.printf("[%d/%d]     %.2f Gbit/s", p.done+1, p.total, v/1e9)
	default:
		p.printf("[%d/%d]     %.0f tx/s, p99 %.1f us", p.done+1, p.total, v, s.Values[model.LatencyP99US])
	}
}

func (p *progress) endCase(c *model.Case, status model.Status, reason string) {
	p.done++
	p.planned += expected(c)
	if reason != "" {
		p.printf("[%d/%d]   %s: %s (%s)", p.done, p.total, status, reason, time.Since(p.caseAt).Round(100*time.Millisecond))
		return
	}
	p.printf("[%d/%d]   %s (%s)", p.done, p.total, status, time.Since(p.caseAt).Round(100*time.Millisecond))
}
