package explain

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
	// stacks may fall short, but not far. On a virtual machine the timer
	// runs on through time the hypervisor took from a busy CPU (steal),
	// which /proc/stat keeps apart from busy: the stacks may stand for it.
	window := after.Sub(before)
	machine, steal := window.Busy.Seconds(), window.Steal.Seconds()
	t.Logf("stages %v; stacks stand for %.3f busy CPU-s, /proc/stat counted %.3f busy and %.3f stolen", p.StagesS, sampled, machine, steal)
	if sampled < 0.75*machine || sampled > 1.05*(machine+steal) {
		t.Errorf("stacks stand for %.3f busy CPU-s, /proc/stat counted %.3f busy and %.3f stolen", sampled, machine, steal)
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

// TestOrphanedRecordingsGoWithTheirProcess: a recording whose process has
// ended is removed; one of a live process, and anything not named as a
// recording, stays.
func TestOrphanedRecordingsGoWithTheirProcess(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	names := map[string]bool{ // name: removed
		fmt.Sprintf("cnb-profile-%d-1.data", dead.Process.Pid): true,
		fmt.Sprintf("cnb-profile-%d-2.data", os.Getpid()):      false,
		fmt.Sprintf("cnb-profile-%d-3.txt", dead.Process.Pid):  false,
		"cnb-profile-notapid-4.data":                           false,
		fmt.Sprintf("other-%d-5.data", dead.Process.Pid):       false,
	}
	for name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := RemoveOrphanedRecordings(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 {
		t.Errorf("removed %v, want only the dead process's recording", removed)
	}
	for name, gone := range names {
		_, err := os.Stat(filepath.Join(dir, name))
		if exists := err == nil; exists == gone {
			t.Errorf("%s: exists %v, want removed %v", name, exists, gone)
		}
	}
}
