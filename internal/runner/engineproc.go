package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"cnbench/internal/cpu"
	"cnbench/internal/engine"
	"cnbench/internal/topo"
)

// engineProc is one `cnbench engine` process running inside an endpoint,
// in a cgroup of its own so its CPU time can be read.
type engineProc struct {
	ep     *topo.Endpoint
	cmd    *exec.Cmd
	client *engine.Client
	cgroup *cpu.Cgroup
	cgName string
	hier   cpu.Hierarchy
	stderr *limitedBuffer
	waited chan error
}

// startEngine forks the engine from a thread inside the endpoint's
// namespace, so the process is born there. Its stdin is the control
// channel: when the runner dies the pipe closes and the engine exits; the
// parent-death signal covers an engine stuck in a system call.
func startEngine(ep *topo.Endpoint, command, env []string, hier cpu.Hierarchy, cgName string) (p *engineProc, err error) {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start engine in %s: %w", ep.NS.Name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start engine in %s: %w", ep.NS.Name, err)
	}
	p = &engineProc{ep: ep, cmd: cmd, hier: hier, cgName: cgName, stderr: &limitedBuffer{max: 8192}, waited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if p.cgroup, err = hier.Create(cgName); err != nil {
		return nil, err
	}
	if err := ep.NS.Do(cmd.Start); err != nil {
		return nil, errors.Join(fmt.Errorf("start engine in %s: %w", ep.NS.Name, err), hier.Remove(cgName))
	}
	go func() { p.waited <- cmd.Wait() }()
	if err := p.cgroup.Add(cmd.Process.Pid); err != nil {
		return nil, errors.Join(err, p.stop())
	}
	p.client = engine.NewClient(stdin, stdout)
	return p, nil
}

// stop asks the engine to quit, kills it if it does not within a second,
// and removes its cgroup.
func (p *engineProc) stop() error {
	if p.client != nil {
		_ = p.client.Quit()
	}
	select {
	case <-p.waited:
	case <-time.After(time.Second):
		_ = p.cmd.Process.Kill()
		<-p.waited
	}
	return p.hier.Remove(p.cgName)
}

// describe adds what the engine said on stderr to an error.
func (p *engineProc) describe(err error) error {
	if msg := strings.TrimSpace(p.stderr.String()); msg != "" {
		return fmt.Errorf("%w (engine in %s said: %s)", err, p.ep.NS.Name, msg)
	}
	return err
}

func (p *engineProc) usage() (cpu.Usage, error) { return p.cgroup.Usage() }

// listen starts the server side on the endpoint's address.
func (p *engineProc) listen(ctx context.Context) (int, error) {
	port, err := p.client.Listen(ctx, p.ep.Addr.String(), 0)
	if err != nil {
		return 0, p.describe(fmt.Errorf("listen on %s: %w", p.ep.Addr, err))
	}
	return port, nil
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
