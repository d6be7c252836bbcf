// Package daemon starts the long-running programs cnbench runs inside an
// emulated host's namespace (containerd and dockerd, ovsdb-server and
// ovs-vswitchd) and stops them again.
//
// A daemon is forked from a thread inside the host's namespace, so it is
// born there; it gets a parent-death signal and a process group of its
// own, and a record (package cleanup) names its PID and private
// directory, so that a sweep ends it should the run die without stopping
// it. Its standard output and error go to a log file in that directory,
// whose end explains a daemon that exits early.
package daemon

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"cnbench/internal/cleanup"
	"cnbench/internal/excerpt"
	"cnbench/internal/netns"
)

// Spec is a daemon to start.
type Spec struct {
	// Name is what messages call the daemon ("dockerd").
	Name string
	// NS is the host's namespace the daemon is born in.
	NS *netns.NS
	// Token is the run's, and Record the daemon's name within it in the
	// cleanup records.
	Token  netns.Token
	Record string
	// Dir is the daemon's private directory: its working directory, and
	// removed with it by a sweep.
	Dir string
	// Log takes the daemon's standard output and error.
	Log string
	// Args are the program and its arguments.
	Args []string
	// Env is added to cnbench's own environment.
	Env []string
	// Unshare are the namespaces (CLONE_NEW*) the daemon gets of its own.
	Unshare uintptr
}

// Process is a daemon cnbench started.
type Process struct {
	Name   string
	Cmd    *exec.Cmd
	spec   Spec
	waited <-chan struct{}
	// stopping is set once cnbench ends the daemon itself; an exit
	// before that is a death to report.
	stopping atomic.Bool
}

// networkDeaths are the daemons of one network that ended before cnbench
// stopped them; died is closed at the first.
type networkDeaths struct {
	list []string
	died chan struct{}
}

// deaths are the networks' deaths by run token, until Deaths reports them.
var deaths struct {
	mu    sync.Mutex
	byRun map[netns.Token]*networkDeaths
}

// deathsOf is token's record, made if need be; deaths.mu is held.
func deathsOf(tok netns.Token) *networkDeaths {
	if deaths.byRun == nil {
		deaths.byRun = map[netns.Token]*networkDeaths{}
	}
	d := deaths.byRun[tok]
	if d == nil {
		d = &networkDeaths{died: make(chan struct{})}
		deaths.byRun[tok] = d
	}
	return d
}

// Died is closed once a daemon of token's network has ended by itself,
// until Deaths reports it.
func Died(tok netns.Token) <-chan struct{} {
	deaths.mu.Lock()
	defer deaths.mu.Unlock()
	return deathsOf(tok).died
}

// Deaths returns, and forgets, the daemons of token's network that ended
// by themselves (killed, crashed), each as "ovs-vswitchd in cnb-1a2b-h1
// (pid 123) was killed by SIGKILL": what a failure on that network should
// name.
func Deaths(tok netns.Token) []string {
	deaths.mu.Lock()
	defer deaths.mu.Unlock()
	d := deaths.byRun[tok]
	delete(deaths.byRun, tok)
	if d == nil {
		return nil
	}
	return d.list
}

// watch notes the daemon's death if it ends before it is stopped.
func (p *Process) watch() {
	<-p.waited
	if p.stopping.Load() {
		return
	}
	Report(p.spec.Token, fmt.Sprintf("%s in %s %s", p.Name, p.spec.NS.Name, cleanup.HowEnded(p.Cmd.ProcessState)))
}

// Report notes the death of a process token's network depends on that is
// not one of the daemons started here (a guest's qemu), as what ended
// and how: it is then among Deaths, and Died is closed.
func Report(tok netns.Token, what string) {
	deaths.mu.Lock()
	defer deaths.mu.Unlock()
	d := deathsOf(tok)
	if len(d.list) == 0 {
		close(d.died)
	}
	d.list = append(d.list, what)
}

// Start forks the daemon. It returns the process whenever one was
// started, even with an error, so that the caller stops it.
//
// Equivalent to: ip netns exec HOST setsid ARGS >LOG 2>&1 &
func Start(s Spec) (*Process, error) {
	p := &Process{Name: s.Name, Cmd: exec.Command(s.Args[0], s.Args[1:]...), spec: s}
	log, err := os.Create(s.Log)
	if err != nil {
		return nil, fmt.Errorf("%s log in %s: %w", p.Name, s.Dir, err)
	}
	defer log.Close()
	p.Cmd.Stdout, p.Cmd.Stderr = log, log
	p.Cmd.Dir = s.Dir
	p.Cmd.Env = append(os.Environ(), s.Env...)
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true, Unshareflags: s.Unshare}
	waited, err := cleanup.StartDaemon(s.NS, p.Cmd, s.Token, s.Record, s.Dir)
	if waited == nil {
		return nil, err
	}
	p.waited = waited
	go p.watch()
	return p, err
}

// Exited is closed once the daemon has exited.
func (p *Process) Exited() <-chan struct{} { return p.waited }

// WaitFor waits until path exists, or the daemon has exited.
func (p *Process) WaitFor(path string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-p.waited:
			return fmt.Errorf("%s exited before creating %s: %s", p.Name, path, p.Tail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not create %s within %v: %s", p.Name, path, limit, p.Tail())
		}
	}
}

// Tail is the end of what the daemon logged.
func (p *Process) Tail() string {
	data, _ := os.ReadFile(p.spec.Log)
	return excerpt.Tail(string(data), 600)
}

// Stop ends the daemon by its PID, SIGTERM first and SIGKILL once grace
// has passed, and drops its record.
func (p *Process) Stop(grace time.Duration) error {
	p.stopping.Store(true)
	cleanup.StopDaemon(p.Cmd.Process, p.waited, grace)
	return cleanup.ForgetDaemon(p.spec.Token, p.spec.Record)
}

// StopAll stops daemons newest first, as they were started in order of
// need, and joins the errors.
func StopAll(procs []*Process, grace time.Duration) error {
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		errs = append(errs, procs[i].Stop(grace))
	}
	return errors.Join(errs...)
}
