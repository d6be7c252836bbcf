package site

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"cnbench/internal/cpu"
	"cnbench/internal/engine"
	"cnbench/internal/modes"
	"cnbench/internal/netstat"
	"cnbench/internal/pinning"
	"cnbench/internal/selfexe"
	"cnbench/internal/topo"
)

// Local is an endpoint in a namespace on this machine, with a cgroup of
// its own, so that the CPU time of everything started there can be read.
type Local struct {
	ep     *topo.Endpoint
	cgroup *cpu.Cgroup
	cgName string
	hier   cpu.Hierarchy
	env    []string
	cpus   []int
}

var _ Sharer = (*Local)(nil)

// NewLocal makes the endpoint a site, with a cgroup cgName in hier; its
// processes get env.
func NewLocal(ep *topo.Endpoint, hier cpu.Hierarchy, cgName string, env []string) (*Local, error) {
	cg, err := hier.Create(cgName)
	if err != nil {
		return nil, err
	}
	return &Local{ep: ep, cgroup: cg, cgName: cgName, hier: hier, env: env}, nil
}

func (s *Local) Endpoint() *topo.Endpoint      { return s.ep }
func (s *Local) Pin(cpus []int)                { s.cpus = cpus }
func (s *Local) CPUs() []int                   { return s.cpus }
func (s *Local) Refuses(workload string) error { return nil }

func (s *Local) NamespacePath() string { return s.ep.NS.Path() }

// EngineHome is the endpoint's host and the CPUs its engine is pinned
// to.
func (s *Local) EngineHome() string {
	host := s.ep.NS.Name
	if s.ep.Host != nil {
		host = s.ep.Host.Name
	}
	return host + " cpus " + pinning.FormatList(s.cpus)
}

// Close removes the cgroup; every process started in the site must have
// ended.
func (s *Local) Close() error { return s.hier.Remove(s.cgName) }

// Read reads the cgroup's CPU time and the namespace's counters. The
// engine's traffic is the only traffic there: the namespace is cnbench's
// own.
func (s *Local) Read(traffic bool) (Reading, error) {
	r := Reading{Namespace: s.ep.NS.Name}
	var errs [3]error
	r.CPU, errs[0] = s.cgroup.Usage()
	if traffic {
		var links []netstat.Link
		links, errs[1] = netstat.ReadLinks(s.ep.NS)
		r.Links = sumTraffic(links)
		r.UDP, errs[2] = netstat.ReadUDP(s.ep.NS)
	}
	return r, errors.Join(errs[:]...)
}

// Start forks command from a thread inside the endpoint's namespace, so
// the process is born there, and moves it into the site's cgroup before
// it has done any work worth counting. The parent-death signal ends it if
// the runner dies.
func (s *Local) Start(command []string, configure func(*exec.Cmd) error) (*Proc, error) {
	cmd := selfexe.Exec(command)
	cmd.Env = s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p := newProc(cmd, s.ep.NS.Name)
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
		return nil, errors.Join(err, p.Kill())
	}
	return p, nil
}

// WaitListening reads the endpoint's sockets from its namespace.
func (s *Local) WaitListening(ctx context.Context, proto string, port int, limit time.Duration) error {
	return netstat.WaitListening(ctx, s.ep.NS, proto, port, limit)
}

// startPinned starts cmd from the calling, locked thread with that
// thread's CPU affinity narrowed to the site's CPUs for the fork: the
// child inherits the mask before it runs a single instruction, so every
// thread it ever makes is pinned, with no window a later
// sched_setaffinity would leave. The thread's own mask is restored after.
//
// Equivalent to: taskset -c CPUS COMMAND
func (s *Local) startPinned(cmd *exec.Cmd) error {
	if len(s.cpus) == 0 {
		return cmd.Start()
	}
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		return fmt.Errorf("read CPU affinity: %w", err)
	}
	set := pinning.Set(s.cpus)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to CPUs %s: %w", pinning.FormatList(s.cpus), err)
	}
	startErr := cmd.Start()
	if err := unix.SchedSetaffinity(0, &orig); err != nil {
		return errors.Join(startErr, fmt.Errorf("restore CPU affinity: %w", err))
	}
	return startErr
}

// StartEngine starts the engine as a child in the endpoint, controlled
// over its stdin and stdout.
func (s *Local) StartEngine(command []string) (*Engine, error) {
	var client *engine.Client
	p, err := s.Start(command, func(cmd *exec.Cmd) error {
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		cmd.Stdout = nil
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		client = engine.NewClient(stdin, stdout)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return engineOfProc(client, p), nil
}

// sumTraffic sums the counters of the links that carry traffic once.
func sumTraffic(links []netstat.Link) netstat.Counters { return netstat.Sum(links, countsTraffic) }

// countsTraffic says whether a link's counters belong in the sum. Links a
// frame crosses twice within the namespace, bridges and their ports, would
// count it twice; endpoints hold no such links, and in a host's own
// namespace (the native baseline) the traffic is on lo or the NIC.
func countsTraffic(l netstat.Link) bool {
	return !modes.Uncounted(l.Type) && !l.Enslaved
}
