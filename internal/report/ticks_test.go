package report

import (
	"math"
	"testing"
)

// TestTicksOfAnAxisWithoutFiniteBounds returns at once: gonum's tick
// search never ends on a NaN bound, which an HTML report of values near
// the float limit once handed it.
func TestTicksOfAnAxisWithoutFiniteBounds(t *testing.T) {
	for _, b := range [][2]float64{{math.NaN(), 1}, {0, math.Inf(1)}, {math.Inf(-1), math.NaN()}} {
		if ticks := (plainTicks{}).Ticks(b[0], b[1]); ticks != nil {
			t.Errorf("plain ticks on [%v, %v]: %v", b[0], b[1], ticks)
		}
		if ticks := (logTicks{format: formatPlain}).Ticks(b[0], b[1]); ticks != nil {
			t.Errorf("log ticks on [%v, %v]: %v", b[0], b[1], ticks)
		}
	}
	if ticks := (plainTicks{}).Ticks(0, 10); len(ticks) == 0 {
		t.Error("no ticks on [0, 10]")
	}
}
