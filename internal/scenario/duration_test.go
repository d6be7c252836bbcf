package scenario

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"10s": 10 * time.Second, "1m30s": 90 * time.Second, "5": 5 * time.Second,
		"0.25": 250 * time.Millisecond, "1e1": 10 * time.Second, "-2": -2 * time.Second, "0": 0,
	}
	for in, want := range good {
		if got, err := parseDuration(in); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "Inf", "NaN", "0x10", "1e300", "10 s"} {
		if got, err := parseDuration(in); err == nil {
			t.Errorf("parseDuration(%q) = %v, want an error", in, got)
		}
	}
}
