package site

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"cnbench/internal/cleanup"
	"cnbench/internal/headbuf"
)

// Proc is a process started in a site.
type Proc struct {
	// Cmd is the process's command; configure functions may attach
	// pipes to it before it starts.
	Cmd    *exec.Cmd
	where  string
	stdout *headbuf.Buffer
	stderr *headbuf.Buffer
	waited chan struct{}
	err    error
	// end stops a process that is not a child of this one, such as a
	// program an agent started; nil for children.
	end func()
	// how says how such a process ended, where there is no ProcessState.
	how string
}

func newProc(cmd *exec.Cmd, where string) *Proc {
	p := &Proc{Cmd: cmd, where: where, stdout: headbuf.New(1 << 20), stderr: headbuf.New(8192), waited: make(chan struct{})}
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

// describeWait is how long Describe waits for a process to be seen
// ending: a failed write to a process that was just killed comes back as
// soon as its pipe closes, a moment before its exit status is known.
const describeWait = 200 * time.Millisecond

// Describe adds to an error how the process ended, if it has (a process
// that fails to answer has often died: "was killed by SIGKILL" says so
// where "file already closed" does not), and what it said on stderr.
func (p *Proc) Describe(err error) error {
	if p == nil {
		return err
	}
	var notes []string
	if ended := p.endedWithin(describeWait); ended != "" {
		notes = append(notes, ended)
	}
	if msg := strings.TrimSpace(p.stderr.String()); msg != "" {
		notes = append(notes, fmt.Sprintf("%s in %s said: %s", p.Cmd.Args[0], p.where, msg))
	}
	if len(notes) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(notes, "; "))
}

// Ended says how the process ended, as Describe does, or "" while it
// runs.
func (p *Proc) Ended() string { return p.endedWithin(0) }

// endedWithin waits up to limit for the process to end and says how it
// did ("ovs-vswitchd in cnb-1a2b-h1 (pid 123) was killed by SIGKILL"),
// or returns "" if it is still running.
func (p *Proc) endedWithin(limit time.Duration) string {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-p.waited:
	case <-timer.C:
		select {
		case <-p.waited: // both were ready
		default:
			return ""
		}
	}
	how := p.how
	if how == "" {
		how = cleanup.HowEnded(p.Cmd.ProcessState)
	}
	return fmt.Sprintf("%s in %s %s", p.Cmd.Args[0], p.where, how)
}
