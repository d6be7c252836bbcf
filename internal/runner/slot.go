package runner

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"cnbench/internal/cpu"
	"cnbench/internal/placement"
	"cnbench/internal/topo"
)

// slot is an endpoint with the cgroup its processes run in, so that the
// CPU time of everything started there can be read.
type slot struct {
	ep     *topo.Endpoint
	cgroup *cpu.Cgroup
	cgName string
	hier   cpu.Hierarchy
	env    []string
	// cpus pins the slot's processes; nil leaves them to the scheduler.
	cpus []int
	// agent is set when the endpoint lives on an agent's machine; the
	// agent then owns its cgroup and starts its engine.
	agent *agentSlot
	// group is every endpoint of the case this slot belongs to; nil
	// where the case's endpoints were not placed on this machine.
	group *group
	// guest is set when the endpoint sits inside a VM (vm.go).
	guest *guestSlot
}

func newSlot(ep *topo.Endpoint, hier cpu.Hierarchy, cgName string, env []string) (*slot, error) {
	cg, err := hier.Create(cgName)
	if err != nil {
		return nil, err
	}
	return &slot{ep: ep, cgroup: cg, cgName: cgName, hier: hier, env: env, guest: guestSlotFor(ep)}, nil
}

// close removes the cgroup; every process started in the slot must have
// ended.
func (s *slot) close() error {
	if s.agent != nil {
		return nil
	}
	return s.hier.Remove(s.cgName)
}

func (s *slot) usage() (cpu.Usage, error) {
	if s.guest != nil {
		return s.guest.usage()
	}
	return s.cgroup.Usage()
}

// proc is a process started in a slot.
type proc struct {
	slot   *slot
	cmd    *exec.Cmd
	stdout *limitedBuffer
	stderr *limitedBuffer
	waited chan struct{}
	err    error
	// end stops a process that is not a child of this one, such as an
	// engine in a guest; nil for children.
	end func()
}

// start forks command from a thread inside the endpoint's namespace, so
// the process is born there, and moves it into the slot's cgroup before it
// has done any work worth counting. The parent-death signal ends it if the
// runner dies. configure may attach pipes before the start.
func (s *slot) start(command []string, configure func(*exec.Cmd) error) (*proc, error) {
	if s.agent != nil {
		return nil, fmt.Errorf("%w: %s on an agent's machine: agents start only cnbench's own engine", errEngineCannot, command[0])
	}
	if s.guest != nil {
		return nil, fmt.Errorf("%w: %s inside a VM: guests carry only cnbench's own engine", errEngineCannot, command[0])
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p := &proc{slot: s, cmd: cmd, stdout: &limitedBuffer{max: 1 << 20}, stderr: &limitedBuffer{max: 8192}, waited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if configure != nil {
		if err := configure(cmd); err != nil {
			return nil, fmt.Errorf("start %s in %s: %w", command[0], s.ep.NS.Name, err)
		}
	}
	if err := s.ep.NS.Do(func() error { return s.startPinned(cmd) }); err != nil {
		return nil, fmt.Errorf("start %s in %s: %w", command[0], s.ep.NS.Name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.waited)
	}()
	if err := s.cgroup.Add(cmd.Process.Pid); err != nil {
		return nil, errors.Join(err, p.kill())
	}
	return p, nil
}

// startPinned starts cmd from the calling, locked thread with that
// thread's CPU affinity narrowed to the slot's CPUs for the fork: the
// child inherits the mask before it runs a single instruction, so every
// thread it ever makes is pinned, with no window a later
// sched_setaffinity would leave. The thread's own mask is restored after.
//
// Equivalent to: taskset -c CPUS COMMAND
func (s *slot) startPinned(cmd *exec.Cmd) error {
	if len(s.cpus) == 0 {
		return cmd.Start()
	}
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		return fmt.Errorf("read CPU affinity: %w", err)
	}
	set := placement.Set(s.cpus)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to CPUs %s: %w", placement.FormatList(s.cpus), err)
	}
	startErr := cmd.Start()
	if err := unix.SchedSetaffinity(0, &orig); err != nil {
		return errors.Join(startErr, fmt.Errorf("restore CPU affinity: %w", err))
	}
	return startErr
}

// wait waits for the process to end by itself, at most limit.
func (p *proc) wait(limit time.Duration) error {
	select {
	case <-p.waited:
		if p.err != nil {
			return p.describe(fmt.Errorf("%s: %w", p.cmd.Args[0], p.err))
		}
		return nil
	case <-time.After(limit):
		return errors.Join(fmt.Errorf("%s did not finish within %v", p.cmd.Args[0], limit), p.kill())
	}
}

// kill ends the process, by its PID, and reaps it.
func (p *proc) kill() error {
	select {
	case <-p.waited:
		return nil
	default:
	}
	if p.end != nil {
		p.end()
		<-p.waited
		return nil
	}
	_ = p.cmd.Process.Kill()
	<-p.waited
	return nil
}

// stopWithin lets the process end by itself for grace, then kills it.
func (p *proc) stopWithin(grace time.Duration) {
	select {
	case <-p.waited:
	case <-time.After(grace):
		_ = p.kill()
	}
}

// describe adds what the process said on stderr to an error.
func (p *proc) describe(err error) error {
	if p == nil {
		return err
	}
	if msg := strings.TrimSpace(p.stderr.String()); msg != "" {
		return fmt.Errorf("%w (%s in %s said: %s)", err, p.cmd.Args[0], p.slot.ep.NS.Name, msg)
	}
	return err
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
