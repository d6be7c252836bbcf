package site

import (
	"time"

	"cnbench/internal/engine"
)

// Engine is cnbench's own engine running in a site, driven through
// Client over its control lines wherever it runs.
type Engine struct {
	Client *engine.Client
	// stop ends the engine, giving it grace to quit by itself.
	stop func(grace time.Duration)
	// describe adds what the engine said on stderr to an error.
	describe func(error) error
	// ended says how the engine ended, or "" while it runs.
	ended func() string
}

// Stop asks the engine to quit and ends it if it has not within a
// second.
func (e *Engine) Stop() {
	if e != nil {
		e.stop(time.Second)
	}
}

// Describe adds what the engine said on stderr, where that is known, to
// an error.
func (e *Engine) Describe(err error) error {
	if e == nil || e.describe == nil {
		return err
	}
	return e.describe(err)
}

// Ended says how the engine ended ("... (pid N) was killed by SIGKILL"),
// or "" while it runs or where that is not known.
func (e *Engine) Ended() string {
	if e == nil || e.ended == nil {
		return ""
	}
	return e.ended()
}

// engineOfProc is an engine that is a process started here: it quits
// when asked, or when its stdin closes, and is killed past the grace.
func engineOfProc(c *engine.Client, p *Proc) *Engine {
	return &Engine{
		Client: c,
		stop: func(grace time.Duration) {
			_ = c.Quit()
			p.StopWithin(grace)
		},
		describe: p.Describe,
		ended:    p.Ended,
	}
}
