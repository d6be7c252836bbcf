package agent

import (
	"bufio"
	"os/exec"
	"testing"
	"time"
)

// TestTreeCPUReadsBelowATick reads the CPU time of live processes that
// each worked a few milliseconds, and holds it against what the kernel
// reports for them once they are reaped (wait4's rusage, in
// microseconds). Read in /proc/PID/stat's 10 ms ticks, the three would
// be off by up to 30 ms.
func TestTreeCPUReadsBelowATick(t *testing.T) {
	var cmds []*exec.Cmd
	var pids []int
	for range 3 {
		// A few milliseconds of shell arithmetic, then a word, then
		// sleep in the same process.
		cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; echo ready; exec sleep 30`)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill() //nolint:errcheck // ended below unless the test failed first
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("process %d said %q (%v)", cmd.Process.Pid, line, err)
		}
		cmds = append(cmds, cmd)
		pids = append(pids, cmd.Process.Pid)
	}
	live, err := treeCPU(pids)
	if err != nil {
		t.Fatal(err)
	}
	var reaped time.Duration
	for _, cmd := range cmds {
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait() // killed: its error says so
		reaped += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	t.Logf("read live: %v (user %v, system %v); reaped: %v", live.Total(), live.User, live.System, reaped)
	if reaped <= 0 {
		t.Fatal("the kernel reports no CPU time for three busy shells")
	}
	// A reading in ticks is a whole number of them; one in nanoseconds
	// almost never is.
	if live.Total()%tick == 0 {
		t.Errorf("live reading %v is a whole number of %v ticks", live.Total(), tick)
	}
	// Being killed and exiting costs each process more: about half a
	// millisecond on a quiet machine, up to 1.2 ms while the rest of the
	// suite ran (3.5 ms for the three).
	if d := reaped - live.Total(); d < 0 || d > 5*time.Millisecond {
		t.Errorf("live reading %v, reaped %v: off by %v, want within 5ms", live.Total(), reaped, d)
	}
}
