package runner

import (
	"fmt"
	"slices"
	"strings"

	"cnbench/internal/awake"
	"cnbench/internal/model"
	"cnbench/internal/pinning"
	"cnbench/internal/workload"
)

// Awake says which cases keep the CPUs from idling.
type Awake int

const (
	// AwakeNever leaves the CPUs alone.
	AwakeNever Awake = iota
	// AwakeForRoundTrips keeps them awake for the workloads that time
	// round trips (workload.Row.RoundTrips), whose threads block and
	// wake on every message, and leaves them alone for streams: a
	// stream keeps its CPUs busy by itself, and spinners that share its
	// cores slowed some paths' streams more than others' (see
	// docs/performance.md).
	AwakeForRoundTrips
	// AwakeAlways keeps them awake for every case.
	AwakeAlways
)

// awakeNames are the names flags give the choices; "true" and "false"
// are kept for the flag's boolean past.
var awakeNames = []struct {
	name string
	a    Awake
}{
	{"never", AwakeNever}, {"round-trips", AwakeForRoundTrips}, {"always", AwakeAlways},
	{"false", AwakeNever}, {"true", AwakeAlways},
}

// ParseAwake reads a choice by its name.
func ParseAwake(name string) (Awake, error) {
	for _, n := range awakeNames {
		if n.name == name {
			return n.a, nil
		}
	}
	return 0, fmt.Errorf("%q is none of never, round-trips, always", name)
}

func (a Awake) String() string {
	for _, n := range awakeNames {
		if n.a == a {
			return n.name
		}
	}
	return fmt.Sprintf("Awake(%d)", int(a))
}

// For reports whether a case of the workload keeps the CPUs awake.
func (a Awake) For(workloadName string) bool {
	switch a {
	case AwakeAlways:
		return true
	case AwakeForRoundTrips:
		return workload.Get(workloadName).RoundTrips()
	}
	return false
}

// spinners keeps this machine's CPUs awake while the cases that ask for
// it run: started when such a group of cases begins, stopped when a
// group that does not ask begins, or when the run ends.
type spinners struct {
	r *Runner
	// while names the cases that ask, for the run's log.
	while     string
	announced bool
	// cpus are this machine's, read when the spinners first start.
	cpus []int
	k    *awake.Keeper
}

// newSpinners prepares the spinners for a run's cases; none start yet.
func newSpinners(r *Runner, cases []model.Case) *spinners {
	var asking []string
	all := true
	for _, c := range cases {
		switch {
		case !c.Params.KeepCPUsAwake:
			all = false
		case !slices.Contains(asking, c.Workload):
			asking = append(asking, c.Workload)
		}
	}
	s := &spinners{r: r, while: "cases run"}
	if !all {
		s.while = strings.Join(asking, ", ") + " cases run"
	}
	return s
}

// want starts or stops the spinners.
func (s *spinners) want(on bool) error {
	if !on {
		s.stop()
		return nil
	}
	if s.k != nil {
		return nil
	}
	if s.cpus == nil {
		m, err := pinning.ReadMachine()
		if err != nil {
			return err
		}
		for _, c := range m {
			s.cpus = append(s.cpus, c.ID)
		}
	}
	var err error
	if s.k, err = awake.Start(s.r.opts.AwakeCommand, s.cpus); err != nil {
		return err
	}
	if !s.announced {
		s.r.prog.Printf("keeping CPUs %s awake while %s (spinner process %d)", pinning.FormatList(s.cpus), s.while, s.k.PID())
		s.announced = true
	}
	return nil
}

// stop ends the spinners if they run.
func (s *spinners) stop() {
	if s.k != nil {
		s.k.Stop()
		s.k = nil
	}
}
