package awake

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"cnbench/internal/pinning"
	"cnbench/internal/testutil"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "awake" {
		if err := Serve(os.Args[2], os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSpinnersFillIdleTimeOnly keeps every CPU awake and checks that the
// CPUs stop idling, that a normal thread still gets its CPU almost
// whole, and that Stop leaves no process behind.
func TestSpinnersFillIdleTimeOnly(t *testing.T) {
	testutil.RequireRoot(t)
	m, err := pinning.ReadMachine()
	if err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for _, c := range m {
		cpus = append(cpus, c.ID)
	}
	k, err := Start([]string{os.Args[0], "awake"}, cpus)
	if err != nil {
		t.Fatal(err)
	}
	pid := k.PID()
	stopped := false
	defer func() {
		if !stopped {
			k.Stop()
		}
	}()

	before := testutil.IdleTicks(t)
	time.Sleep(500 * time.Millisecond)
	after := testutil.IdleTicks(t)
	ticksPerHalfSecond := testutil.TicksPerSecond / 2
	for _, c := range cpus {
		if idle := after[c] - before[c]; idle > int64(ticksPerHalfSecond)/5 {
			t.Errorf("CPU %d idled %d ticks of %d with a spinner on it", c, idle, ticksPerHalfSecond)
		}
	}

	if share := busyShare(t, cpus[0], 300*time.Millisecond); share < 0.9 {
		t.Errorf("a normal thread got %.0f%% of CPU %d next to its spinner, want nearly all", 100*share, cpus[0])
	}

	if err := k.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	stopped = true
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Errorf("spinner process %d still there after Stop (%v)", pid, err)
	}
}

func TestStartRefusesABadList(t *testing.T) {
	if _, err := Start([]string{os.Args[0], "awake"}, nil); err == nil {
		t.Error("started with no CPUs")
	}
	if err := Serve("0,x", strings.NewReader(""), os.Stdout); err == nil || !strings.Contains(err.Error(), "bad CPU list") {
		t.Errorf("Serve(0,x) = %v", err)
	}
}

// busyShare spins a normal-priority thread pinned to cpu for d and
// returns the share of d it ran.
func busyShare(t *testing.T, cpu int, d time.Duration) float64 {
	t.Helper()
	share := make(chan float64)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		set := pinning.Set([]int{cpu})
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			t.Error(err)
			share <- 0
			return
		}
		var start, end unix.Timespec
		unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &start)
		began := time.Now()
		for time.Since(began) < d {
		}
		unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &end)
		share <- float64(end.Nano()-start.Nano()) / float64(time.Since(began).Nanoseconds())
	}()
	return <-share
}
