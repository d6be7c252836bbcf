package site

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Proc is a process started in a site.
type Proc struct {
	// Cmd is the process's command; configure functions may attach
	// pipes to it before it starts.
	Cmd    *exec.Cmd
	where  string
	stdout *limitedBuffer
	stderr *limitedBuffer
	waited chan struct{}
	err    error
	// end stops a process that is not a child of this one, such as an
	// engine in a guest; nil for children.
	end func()
}

func newProc(cmd *exec.Cmd, where string) *Proc {
	p := &Proc{Cmd: cmd, where: where, stdout: &limitedBuffer{max: 1 << 20}, stderr: &limitedBuffer{max: 8192}, waited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	return p
}

// Stdout is the first MiB the process wrote to its standard output,
// unless a pipe took it.
func (p *Proc) Stdout() string { return p.stdout.String() }

// Stderr is the first 8 KiB the process wrote to its standard error.
func (p *Proc) Stderr() string { return p.stderr.String() }

// Wait waits for the process to end by itself, at most limit.
func (p *Proc) Wait(limit time.Duration) error {
	select {
	case <-p.waited:
		if p.err != nil {
			return p.Describe(fmt.Errorf("%s: %w", p.Cmd.Args[0], p.err))
		}
		return nil
	case <-time.After(limit):
		return errors.Join(fmt.Errorf("%s did not finish within %v", p.Cmd.Args[0], limit), p.Kill())
	}
}

// Kill ends the process, by its PID, and reaps it.
func (p *Proc) Kill() error {
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
	_ = p.Cmd.Process.Kill()
	<-p.waited
	return nil
}

// StopWithin lets the process end by itself for grace, then kills it.
func (p *Proc) StopWithin(grace time.Duration) {
	select {
	case <-p.waited:
	case <-time.After(grace):
		_ = p.Kill()
	}
}

// Describe adds what the process said on stderr to an error.
func (p *Proc) Describe(err error) error {
	if p == nil {
		return err
	}
	if msg := strings.TrimSpace(p.stderr.String()); msg != "" {
		return fmt.Errorf("%w (%s in %s said: %s)", err, p.Cmd.Args[0], p.where, msg)
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
