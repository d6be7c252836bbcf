package measure

import (
	"context"

	"cnbench/internal/model"
	"cnbench/internal/workload"
)

// Profiler records where the machine's CPU time goes while a sample runs
// (package explain does, with perf); Take runs one around the traffic
// when it is given one.
type Profiler interface {
	Start(ctx context.Context) (Profiling, error)
}

// Profiling is one recording. Stop ends it as the traffic ends; Profile
// reads it afterwards, when reading costs the sample nothing; Close ends
// it and removes what it recorded, whatever happened before.
type Profiling interface {
	Stop() error
	Profile() (model.Profile, error)
	Close()
}

// startProfile starts a recording if there is a profiler; a profiler
// that fails leaves the sample its note instead of failing it.
func startProfile(ctx context.Context, prof Profiler) (Profiling, *model.Profile) {
	if prof == nil {
		return nil, nil
	}
	rec, err := prof.Start(ctx)
	if err != nil {
		return nil, &model.Profile{Note: err.Error()}
	}
	return rec, nil
}

// finishProfile reads a recording and fills in what it is checked and
// divided by: the machine's busy time over the sample's readings and the
// units of the case's cost.
func finishProfile(rec Profiling, failed *model.Profile, c model.Case, before, after reading, x Exchange) *model.Profile {
	if failed != nil || rec == nil {
		return failed
	}
	p, err := rec.Profile()
	if err != nil {
		return &model.Profile{Note: err.Error()}
	}
	window := after.machine.Sub(before.machine)
	p.MachineBusyS, p.MachineStealS = window.Busy.Seconds(), window.Steal.Seconds()
	p.Units, p.Unit = costUnits(c, x)
	return &p
}

// costUnits is what the case's CPU cost divides by, as its cpu_s_per_gb
// or cpu_us_per_tx does: GB received for streams, transactions otherwise.
func costUnits(c model.Case, x Exchange) (float64, string) {
	if row, ok := workload.Lookup(c.Workload); ok && row.Shape == workload.Stream {
		return float64(x.ReceivedBytes) / 1e9, "GB"
	}
	return float64(x.transactionsForCPU()), "tx"
}
