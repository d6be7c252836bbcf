package explain

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"cnbench/internal/cpu"
	"cnbench/internal/testutil"
)

// TestRecordingSeesLoopbackTCP records every CPU while this process
// streams TCP over loopback for a second: the stacks must account for the
// CPUs' time over the window (idle included), show TCP, system calls
// and this process's own user time, and leave little to "other".
func TestRecordingSeesLoopbackTCP(t *testing.T) {
	testutil.RequireRoot(t)
	if err := Available(); err != nil {
		t.Skip("cannot profile here: ", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(io.Discard, c)
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	rec, err := Profiler{Table: Default}.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	before, err := cpu.ReadMachine()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	buf := make([]byte, 128<<10)
	for time.Since(began) < time.Second {
		if _, err := conn.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	after, err := cpu.ReadMachine()
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	p, err := rec.Profile()
	if err != nil {
		t.Fatal(err)
	}
	sampled := 0.0
	for stage, s := range p.StagesS {
		if stage != StageIdle {
			sampled += s
		}
	}
	// An idle CPU may sleep through its timer, so only the busy time is
	// checked, against /proc/stat over nearly the same window (the
	// recording also holds perf's answers to enable and disable). The
	// timer misses periods while interrupts are off (Breakdown), so the
	// stacks may fall short, but not far.
	machine := after.Sub(before).Busy.Seconds()
	t.Logf("stages %v; stacks stand for %.3f busy CPU-s, /proc/stat counted %.3f", p.StagesS, sampled, machine)
	if sampled < 0.75*machine || sampled > 1.05*machine {
		t.Errorf("stacks stand for %.3f busy CPU-s, /proc/stat counted %.3f", sampled, machine)
	}
	for _, stage := range []string{"tcp", "syscall", StageEngine} {
		if p.StagesS[stage] <= 0 {
			t.Errorf("no time in %s", stage)
		}
	}
	// The profile is of the whole machine, where other programs may run
	// (a build beside the test); "other" is judged on this process's
	// own stacks, rooted at its thread names.
	self, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	own, ownOther := 0, 0
	for _, st := range p.Stacks {
		if strings.HasPrefix(st.Frames, strings.TrimSpace(string(self))+";") {
			own += st.Count
			if st.Stage == StageOther {
				ownOther += st.Count
			}
		}
	}
	if own == 0 || ownOther*100 > 15*own {
		t.Errorf("other holds %d of this process's %d stacks", ownOther, own)
	}
	if len(p.Stacks) == 0 || p.PeriodNS != PeriodNS {
		t.Errorf("%d stacks, period %d ns; want stacks at %d ns", len(p.Stacks), p.PeriodNS, PeriodNS)
	}
}
