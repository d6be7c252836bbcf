package cpu

import (
	"strings"
	"testing"
	"time"
)

func TestParseStatReadsSoftirqAndSteal(t *testing.T) {
	// A /proc/stat head captured on a two-vCPU guest while a neighbour
	// was busy.
	const stat = "cpu  725362 5940 1200720 1566535 8340 0 532072 186271 0 0\n" +
		"cpu0 356038 3147 628443 737143 4547 0 299218 92370 0 0\n" +
		"intr 1 2 3\n"
	// One CPU's line: its time is the uptime, 4,000,000 ticks.
	m, err := parseStat(strings.NewReader(stat), 40000*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := 5320720 * time.Millisecond; m.Softirq != want {
		t.Errorf("softirq %v, want %v", m.Softirq, want)
	}
	if want := 1862710 * time.Millisecond; m.Steal != want {
		t.Errorf("steal %v, want %v", m.Steal, want)
	}
	if want := (4000000 - 1566535 - 8340 - 186271) * 10 * time.Millisecond; m.Busy != want {
		t.Errorf("busy %v, want the uptime less idle, iowait and steal %v", m.Busy, want)
	}
	if _, err := parseStat(strings.NewReader("cpu 1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\n"), time.Hour); err == nil {
		t.Error("a cpu line without the steal column was accepted")
	}
	if _, err := parseStat(strings.NewReader("intr 1 2\n"), time.Hour); err == nil {
		t.Error("a stat without a cpu line was accepted")
	}
}

func TestReadMachineAdvances(t *testing.T) {
	a, err := ReadMachine()
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadMachine()
	if err != nil {
		t.Fatal(err)
	}
	if d := b.Sub(a); d.Softirq < 0 || d.Steal < 0 {
		t.Errorf("machine time went backwards: %+v", d)
	}
}

func TestIRQTimeAccountedFromTheIRQColumn(t *testing.T) {
	if irqTimeAccounted(nil, "cpu  725362 5940 1200720 1566535 8340 0 532072 186271 0 0") {
		t.Error("a kernel that never counted an irq tick measures irq time")
	}
	if !irqTimeAccounted(nil, "cpu  725362 5940 1200720 1566535 8340 2731 532072 186271 0 0") {
		t.Error("a kernel that counted irq time does not measure it")
	}
}
