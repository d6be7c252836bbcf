package explain

import (
	"math"
	"testing"

	"cnbench/internal/model"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestBreakdownDividesBySummedUnits: two samples, worked by hand. Costs
// per unit are sums over sums, not means of per-sample ratios; idle is
// out, the profiler apart, a failed sample's note kept.
func TestBreakdownDividesBySummedUnits(t *testing.T) {
	samples := []model.Sample{
		{Profile: &model.Profile{Unit: "GB", Units: 2, MachineBusyS: 1.0,
			StagesS: map[string]float64{"tcp": 0.4, "bridge": 0.2, "idle": 1.0, "profiler": 0.02, "other": 0.1}}},
		{Profile: &model.Profile{Unit: "GB", Units: 1, MachineBusyS: 0.5,
			StagesS: map[string]float64{"tcp": 0.2, "bridge": 0.1, "idle": 1.5, "profiler": 0.01, "other": 0.05}}},
		{Profile: &model.Profile{Note: "profile: perf exited"}},
		{},
	}
	b, ok := CaseBreakdown(samples)
	if !ok {
		t.Fatal("no breakdown")
	}
	// The stacks stand for 1.08 busy CPU-s (0.72 + 0.36), the kernel
	// counted 1.5: they cover 72%, and every stage is scaled by 1.5/1.08.
	// tcp 0.6 s over 3 GB, bridge 0.3, other 0.15, the profiler 0.03.
	scale := 1.5 / 1.08
	if !near(b.PerUnitS["tcp"], 0.6*scale/3) || !near(b.PerUnitS["bridge"], 0.3*scale/3) || !near(b.TotalPerUnitS, 1.05*scale/3) {
		t.Errorf("per unit = %v, total %g; want tcp %g, bridge %g, total %g", b.PerUnitS, b.TotalPerUnitS, 0.6*scale/3, 0.3*scale/3, 1.05*scale/3)
	}
	if _, ok := b.PerUnitS["idle"]; ok {
		t.Error("idle is among the stages")
	}
	if !near(b.ProfilerPerUnitS, 0.03*scale/3) {
		t.Errorf("profiler per unit = %g, want %g", b.ProfilerPerUnitS, 0.03*scale/3)
	}
	// The stages and the profiler add up to the kernel's busy time.
	if !near(b.TotalPerUnitS+b.ProfilerPerUnitS, 1.5/3) || !near(b.SampledBusyS, 1.08) || !near(b.StacksCoverPct, 72) {
		t.Errorf("total %g + profiler %g, sampled busy %g, cover %g%%; want 0.5 in all, 1.08 and 72",
			b.TotalPerUnitS, b.ProfilerPerUnitS, b.SampledBusyS, b.StacksCoverPct)
	}
	// other 0.15 of 1.05 busy without the profiler.
	if !near(b.OtherPct, 100*0.15/1.05) {
		t.Errorf("other = %g%%, want %g", b.OtherPct, 100*0.15/1.05)
	}
	if b.Samples != 2 || len(b.Notes) != 1 {
		t.Errorf("samples %d, notes %v; want 2 and the perf note", b.Samples, b.Notes)
	}

	mode := Breakdown{Unit: "GB", Samples: 1, PerUnitS: map[string]float64{"tcp": 0.2, "bridge": 0.1, "other": 0.05}, TotalPerUnitS: 0.35}
	host := Breakdown{Unit: "GB", Samples: 1, PerUnitS: map[string]float64{"tcp": 0.2, "other": 0.03}, TotalPerUnitS: 0.23}
	d, ok := mode.Against(host)
	if !ok || !near(d.TotalS, 0.12) {
		t.Fatalf("delta %+v, ok %v; want a total of 0.12", d, ok)
	}
	// bridge +0.1 (83.3%), other +0.02 (16.7%), tcp 0.
	if d.Stages[0].Stage != "bridge" || !near(d.Stages[0].SharePct, 100*0.1/0.12) || d.Stages[1].Stage != "other" {
		t.Errorf("stages %+v; want bridge first with 83.3%%, then other", d.Stages)
	}
	if _, ok := b.Against(Breakdown{Unit: "tx", Samples: 1}); ok {
		t.Error("a breakdown per GB compared with one per transaction")
	}
}
