// Package awake keeps CPUs from going idle while a run measures, so that
// a thread woken on one of them runs at once.
//
// A round trip wakes a blocked thread twice. On an idle CPU that wake-up
// waits for the CPU to leave its idle state; in a virtual machine without
// a polling idle driver the virtual CPU has halted, and waking it is the
// hypervisor's business, on its schedule. On the 2-vCPU development VM
// that made the per-sample mean round trip wander by 17% between
// consecutive samples of one engine, which no engine comparison survives.
// With each CPU kept busy by a spinner of the lowest priority, the
// spread fell to 2%. The spinners run only when nothing else can: the
// kernel preempts them the moment a measured thread becomes runnable.
//
// This changes what is measured, like booting with idle=poll: round
// trips lose the wake-up cost a real idle machine pays. It is therefore a
// choice (`--keep-cpus-awake`), recorded in each case.
package awake

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"cnbench/internal/pinning"
	"cnbench/internal/selfexe"
)

// Keeper is a running spinner process, one thread per CPU.
type Keeper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// Start runs command (this executable's hidden spinner subcommand) with
// the CPUs to keep awake, in the kernel's list notation, as its last
// argument, and returns once every
// spinner runs at idle priority on its CPU.
func Start(command []string, cpus []int) (*Keeper, error) {
	if len(cpus) == 0 {
		return nil, errors.New("keep CPUs awake: no CPUs given")
	}
	cmd := selfexe.Exec(append(append([]string(nil), command...), pinning.FormatList(cpus)))
	// The spinners must not outlive a runner that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("keep CPUs awake: %w", err)
	}
	k := &Keeper{cmd: cmd, stdin: stdin}
	ready, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(ready) != "ready" {
		k.Stop()
		return nil, fmt.Errorf("keep CPUs awake: the spinners did not start (%q, %v)", strings.TrimSpace(ready), err)
	}
	return k, nil
}

// PID is the spinner process's.
func (k *Keeper) PID() int { return k.cmd.Process.Pid }

// Stop ends the spinners and waits for their process; it kills the
// process (by its PID) if it does not end within a second.
func (k *Keeper) Stop() error {
	k.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- k.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Second):
		k.cmd.Process.Kill()
		return <-done
	}
}

// Serve is the spinner process: it parses the CPU list, spins one thread
// on each at SCHED_IDLE, prints "ready" to out once all are placed, and
// returns when in reaches its end.
func Serve(cpuList string, in io.Reader, out io.Writer) error {
	cpus, err := pinning.ParseList(cpuList)
	if err != nil {
		return fmt.Errorf("keep CPUs awake: %w", err)
	}
	// Each spinner holds a P for good; the goroutine waiting on in needs
	// one more.
	runtime.GOMAXPROCS(len(cpus) + 1)
	var stop atomic.Bool
	placed := make(chan error, len(cpus))
	for _, c := range cpus {
		go spin(c, &stop, placed)
	}
	for range cpus {
		if err := <-placed; err != nil {
			stop.Store(true)
			return err
		}
	}
	if _, err := fmt.Fprintln(out, "ready"); err != nil {
		stop.Store(true)
		return err
	}
	_, err = io.Copy(io.Discard, in)
	stop.Store(true)
	return err
}

// spin keeps one CPU busy at the lowest priority until stop is set.
func spin(cpu int, stop *atomic.Bool, placed chan<- error) {
	runtime.LockOSThread()
	set := pinning.Set([]int{cpu})
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		placed <- fmt.Errorf("pin a spinner to CPU %d: %w", cpu, err)
		return
	}
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}, 0); err != nil {
		placed <- fmt.Errorf("give CPU %d's spinner idle priority: %w", cpu, err)
		return
	}
	placed <- nil
	for !stop.Load() {
	}
}
