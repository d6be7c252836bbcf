package units

import (
	"testing"
)

func TestParseSize(t *testing.T) {
	good := map[string]int{
		"1": 1, "64": 64, "64K": 65536, "64k": 65536, "64KiB": 65536, "64kb": 65536,
		"128K": 131072, "1M": 1 << 20, "1MiB": 1 << 20, "1G": 1 << 30, " 2 K ": 2048, "0": 0, "10b": 10,
	}
	for in, want := range good {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "K", "-1", "1.5K", "64Kb/s", "1T", "0x10", "99999999999999999999", "4G"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestParseRate(t *testing.T) {
	good := map[string]int64{
		"100mbit": 100e6, "1gbit": 1e9, "10G": 10e9, "10g": 10e9, "2.5gbit": 2.5e9, "1GBIT": 1e9,
		"1000000": 1e6, "1500bit": 1500, "1kibit": 1024, "1Mibit": 1 << 20,
		"1MBps": 8e6, "1mbps": 8e6, "10bps": 80, "1.5k": 1500, "40tbit": 40e12,
	}
	for in, want := range good {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fast", "0", "0gbit", "-1gbit", "1.5", "0.1bit", "1.gbit", ".5gbit", "1e9", "10gb", "1 2gbit", "99999999999tbit"} {
		if got, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) = %d, want an error", in, got)
		}
	}
}

func TestFormatRoundTrips(t *testing.T) {
	for _, n := range []int{1, 64, 1000, 1024, 131072, 1 << 20, 3 << 20, 1 << 30, 1<<20 + 1} {
		if got, err := ParseSize(FormatSize(n)); err != nil || got != n {
			t.Errorf("size %d -> %q -> %d, %v", n, FormatSize(n), got, err)
		}
	}
	rates := map[int64]string{1500: "1500bit", 1e3: "1kbit", 2.5e9: "2500mbit", 10e9: "10gbit", 1e12: "1tbit", 1024: "1024bit"}
	for bps, want := range rates {
		if got := FormatRate(bps); got != want {
			t.Errorf("FormatRate(%d) = %q, want %q", bps, got, want)
		}
		if back, err := ParseRate(want); err != nil || back != bps {
			t.Errorf("ParseRate(%q) = %d, %v", want, back, err)
		}
	}
}
