package explain

import (
	"compress/gzip"
	"os"
	"testing"
)

// The recording is perf script output of `perf record -a -g -e cpu-clock
// -c 1000000` over 0.4 s of iperf3 streaming over loopback on this
// 2-CPU VM, which has no PMU: the cpu-clock timer fires late, once
// interrupts are back on, so many samples sit in the functions that turn
// them back on.
func recordedStacks(t *testing.T) []Stack {
	t.Helper()
	f, err := os.Open("testdata/iperf3-loopback.script.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var stacks []Stack
	if err := ParseScript(z, func(s Stack) error { stacks = append(stacks, s); return nil }); err != nil {
		t.Fatal(err)
	}
	return stacks
}

// irqRestores are where samples land when interrupts come back on.
var irqRestores = map[string]bool{"_raw_spin_unlock_irqrestore": true, "_raw_spin_unlock_irq": true,
	"__local_bh_enable_ip": true, "local_bh_enable": true, "finish_task_switch": true}

// TestRecordedStacksAttributeBeyondTheirLeaves: by its leaf, a sample
// that landed where interrupts came back on would be "other" (a lock
// function names no stage) or all in one bucket; by its stack it goes to
// the stage that called it, which for a wake-up from sock_def_readable is
// the scheduler and for tcp_write_xmit is TCP or what it called.
func TestRecordedStacksAttributeBeyondTheirLeaves(t *testing.T) {
	stacks := recordedStacks(t)
	if len(stacks) < 300 {
		t.Fatalf("parsed %d stacks from the recording", len(stacks))
	}
	byLeaf := map[string]int{}
	byStack := map[string]int{}
	restored, fromReadable, readableToSched := 0, 0, 0
	for _, s := range stacks {
		if len(s.Frames) == 0 || !s.Frames[0].Kernel || !irqRestores[bareSymbol(s.Frames[0].Symbol)] {
			continue
		}
		restored++
		leafStage := Default.Symbol(s.Frames[0].Symbol)
		if leafStage == "" {
			leafStage = StageOther
		}
		byLeaf[leafStage]++
		stage := Default.Attribute(s, "")
		byStack[stage]++
		for _, f := range s.Frames {
			if bareSymbol(f.Symbol) == "sock_def_readable" {
				fromReadable++
				if stage == "sched" {
					readableToSched++
				}
				break
			}
		}
	}
	t.Logf("%d of %d stacks end where interrupts come back on; by leaf %v, by stack %v", restored, len(stacks), byLeaf, byStack)
	if restored*10 < len(stacks) {
		t.Fatalf("only %d of %d stacks end in an interrupt-restoring function: not the recording this test is about", restored, len(stacks))
	}
	if byStack[StageOther]*10 > restored {
		t.Errorf("by stack, %d of the %d are still other", byStack[StageOther], restored)
	}
	if len(byStack) < 3 {
		t.Errorf("by stack they went to %v; want them spread over the stages that called them", byStack)
	}
	if fromReadable == 0 || readableToSched != fromReadable {
		t.Errorf("%d of %d reached from sock_def_readable went to the scheduler", readableToSched, fromReadable)
	}
}
