// Package progress tells a person at a terminal, or a log, how a run is
// going: one line per step, or on a terminal a status line kept up to
// date with the case, the sample, the elapsed time and an estimate of
// what is left.
package progress

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	"cnbench/internal/model"
	"cnbench/internal/workload"
)

// Progress reports a run's steps on stderr. On a terminal it keeps one
// status line up to date (case k of n, sample, elapsed, ETA) and prints
// a permanent line per finished case; elsewhere (a log file, CI) it
// prints one plain line per step, since carriage returns would garble it.
type Progress struct {
	w       io.Writer
	live    bool
	total   int
	done    int
	left    time.Duration // expected time of the cases not started yet
	planned time.Duration // expected time of the cases finished
	started time.Time
	caseAt  time.Time

	// turns is set while cases take turns sample by sample; each
	// sample's line then names its engine, or the lines could not be
	// told apart.
	turns bool
	// modes is set when the cases taking turns differ in their mode too;
	// each line then names the mode beside the engine.
	modes bool

	mu     sync.Mutex // guards the status line against the ticker
	status string     // what the status line shows after its clock
	ticker *time.Ticker
	stop   chan struct{}
}

// setupAllowance is a rough cost of building and tearing down a case's
// topology, for the estimate.
const setupAllowance = 300 * time.Millisecond

// statusWidth keeps the status line short enough not to wrap, which
// would break redrawing it in place.
const statusWidth = 110

func expected(c *model.Case) time.Duration {
	return time.Duration(c.Params.WarmupMS+int64(c.Params.Samples)*c.Params.DurationMS)*time.Millisecond + setupAllowance
}

func New(w io.Writer, cases []model.Case) *Progress {
	p := &Progress{w: w, total: len(cases), started: time.Now(), live: isTerminal(w)}
	for i := range cases {
		p.left += expected(&cases[i])
	}
	return p
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && isatty.IsTerminal(f.Fd())
}

// printf prints a permanent line.
func (p *Progress) Printf(format string, args ...any) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		// Run-level lines come before the first case and after the last:
		// no status line to keep.
		p.stopTicker()
		io.WriteString(p.w, "\r\x1b[K")
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}

// step reports a step within a case: a plain line, or the status line.
func (p *Progress) step(c *model.Case, what string) {
	if p == nil || p.w == nil {
		return
	}
	if !p.live {
		fmt.Fprintf(p.w, "[%d/%d]   %s\n", p.done+1, p.total, what)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status = what
	p.redraw(c)
}

// redraw writes the status line; p.mu must be held.
func (p *Progress) redraw(c *model.Case) {
	line := fmt.Sprintf("[%d/%d] %s  %s  %s, eta %s", p.done+1, p.total, c.Key, p.status,
		time.Since(p.caseAt).Round(time.Second), p.eta(c).Round(time.Second))
	if r := []rune(line); len(r) > statusWidth {
		line = string(r[:statusWidth-1]) + "…"
	}
	io.WriteString(p.w, "\r\x1b[K"+line)
}

func (p *Progress) StartCase(c *model.Case) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.caseAt = time.Now()
	p.turns = false
	p.left -= expected(c)
	if p.w == nil {
		return
	}
	if !p.live {
		fmt.Fprintf(p.w, "[%d/%d] %s (eta %s)\n", p.done+1, p.total, c.Key, p.eta(c).Round(time.Second))
		return
	}
	p.status = "setting up"
	p.redraw(c)
	// The clock and ETA tick on during a long sample, which would
	// otherwise look like a hang.
	p.stopTicker()
	p.ticker, p.stop = time.NewTicker(time.Second), make(chan struct{})
	go p.tick(c, p.ticker, p.stop)
}

// startCases starts cases that share a path and take turns: the first
// leads the status line, and a log names the others after it.
func (p *Progress) StartCases(cs []*model.Case) {
	if p == nil {
		return
	}
	p.StartCase(cs[0])
	p.mu.Lock()
	defer p.mu.Unlock()
	p.turns = len(cs) > 1
	p.modes = slices.ContainsFunc(cs, func(c *model.Case) bool { return c.Mode != cs[0].Mode })
	for _, c := range cs[1:] {
		p.left -= expected(c)
		if p.w != nil && !p.live {
			fmt.Fprintf(p.w, "[%d/%d] %s (in turns with the above)\n", p.done+1, p.total, c.Key)
		}
	}
}

func (p *Progress) tick(c *model.Case, t *time.Ticker, stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			select {
			case <-stop: // stopped while waiting for the lock
			default:
				p.redraw(c)
			}
			p.mu.Unlock()
		}
	}
}

// stopTicker ends the case's ticker; p.mu must be held.
func (p *Progress) stopTicker() {
	if p.ticker != nil {
		p.ticker.Stop()
		close(p.stop)
		p.ticker, p.stop = nil, nil
	}
}

// eta is the time left: this case's remaining part plus the rest, scaled
// by how the run's real pace compares with the plan so far.
func (p *Progress) eta(c *model.Case) time.Duration {
	rest := max(expected(c)-time.Since(p.caseAt), 0) + p.left
	if p.planned <= 0 {
		return rest
	}
	pace := float64(time.Since(p.started)) / float64(p.planned)
	return time.Duration(float64(rest) * pace)
}

func (p *Progress) Phase(c *model.Case, what string) {
	p.step(c, p.engineOf(c)+what)
}

func (p *Progress) Sample(c *model.Case, i int) {
	p.step(c, p.engineOf(c)+"sample "+sampleOf(c, i))
}

// engineOf names the case's engine where its lines would otherwise be
// mistaken for another's.
func (p *Progress) engineOf(c *model.Case) string {
	switch {
	case p != nil && p.modes:
		return c.Mode + "/" + c.Engine + " "
	case p != nil && p.turns:
		return c.Engine + " "
	}
	return ""
}

// sampleOf numbers sample i of the case: of a fixed count, or of the
// most a target interval allows.
func sampleOf(c *model.Case, i int) string {
	budget := ""
	if c.Params.TimeBudgetMS > 0 {
		budget = fmt.Sprintf(" or %s", time.Duration(c.Params.TimeBudgetMS)*time.Millisecond)
	}
	switch {
	case c.Params.TargetCIPct > 0:
		return fmt.Sprintf("%d (of %d%s at most, until within %g%%)", i+1, c.Params.MaxSamples, budget, c.Params.TargetCIPct)
	case c.Params.MaxSamples > c.Params.Samples:
		return fmt.Sprintf("%d (of %d%s at most)", i+1, c.Params.MaxSamples, budget)
	}
	return fmt.Sprintf("%d/%d", i+1, c.Params.Samples)
}

func (p *Progress) Retake(c *model.Case, i int, stealPct float64) {
	p.step(c, fmt.Sprintf("%ssample %s: the hypervisor took %.1f%% of a core (over %g%%); taking it again", p.engineOf(c), sampleOf(c, i), stealPct, c.Params.MaxStealPct))
}

func (p *Progress) SampleDone(c *model.Case, s model.Sample) {
	if p == nil {
		return
	}
	if result := sampleResult(c, s); result != "" {
		if p.live {
			p.step(c, fmt.Sprintf("%ssample %s: %s", p.engineOf(c), sampleOf(c, s.Index), result))
			return
		}
		p.step(c, "  "+p.engineOf(c)+result)
	}
}

// sampleResult is a sample's primary metric, as people read it.
func sampleResult(c *model.Case, s model.Sample) string {
	m := workload.PrimaryMetric(c.Workload)
	v, ok := s.Values[m]
	if !ok {
		return ""
	}
	switch m {
	case model.ThroughputBPS, model.MaxRateBPS:
		return fmt.Sprintf("%.2f Gbit/s", v/1e9)
	case model.RTTAvgUS:
		return fmt.Sprintf("rtt avg %.1f us", v)
	case model.ConnectionsPerS:
		return fmt.Sprintf("%.0f connections/s, p99 %.1f us", v, s.Values[model.LatencyP99US])
	default:
		return fmt.Sprintf("%.0f tx/s, p99 %.1f us", v, s.Values[model.LatencyP99US])
	}
}

func (p *Progress) EndCase(c *model.Case, status model.Status, reason string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopTicker()
	p.done++
	p.planned += expected(c)
	if p.w == nil {
		return
	}
	took := time.Since(p.caseAt).Round(100 * time.Millisecond)
	outcome := string(status)
	if reason != "" {
		outcome += ": " + reason
	}
	if !p.live {
		fmt.Fprintf(p.w, "[%d/%d]   %s%s (%s)\n", p.done, p.total, p.engineOf(c), outcome, took)
		return
	}
	last := strings.TrimPrefix(p.status, "sample ")
	if _, result, ok := strings.Cut(last, ": "); ok && status == model.StatusOK {
		outcome += ", last sample " + result
	}
	fmt.Fprintf(p.w, "\r\x1b[K[%d/%d] %s  %s (%s)\n", p.done, p.total, c.Key, outcome, took)
}
