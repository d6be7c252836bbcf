package explain

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"cnbench/internal/cleanup"
	"cnbench/internal/model"
	"cnbench/internal/netns"
)

// PeriodNS is the CPU time between two stacks of one CPU. Sampling is
// not free in a VM, where every timer interrupt exits to the host: with
// perf recording every CPU, iperf3 over loopback here lost 13-20% of its
// throughput at 1 kHz, 5-10% at 250 Hz and 2-6% at 100 Hz. 250 Hz still
// gives a 2 s sample on two busy CPUs 1000 stacks.
const PeriodNS = 4_000_000

// handshake bounds how long perf may take to answer a control command.
const handshake = 15 * time.Second

var (
	triedMu sync.Mutex
	tried   = map[string]error{} // by perf's path
)

// Available says why this machine cannot record every CPU's stacks, or
// nil if it can: perf must be on the PATH and allowed to sample the whole
// machine. Each perf found is tried once.
func Available() error {
	path, err := exec.LookPath("perf")
	if err != nil {
		return errors.New("perf is not installed (Debian: linux-perf)")
	}
	triedMu.Lock()
	defer triedMu.Unlock()
	if err, ok := tried[path]; ok {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "record", "-q", "-a", "-e", "cpu-clock", "-B", "-N", "-o", os.DevNull, "--", "true").CombinedOutput()
	if err != nil {
		err = fmt.Errorf("perf cannot sample every CPU here: %s", lastLine(out, err))
	}
	tried[path] = err
	return err
}

// recordArgs are perf record's arguments: every CPU, kernel and user
// call stacks on the cpu-clock event, events off until the control pipe
// turns them on. No build IDs (-B, -N): perf would otherwise copy every
// binary it saw into ~/.debug; the symbols are read while the same kernel
// and binaries are still there.
func recordArgs(out string) []string {
	return []string{"record", "-q", "-a", "-e", fmt.Sprintf("cpu-clock/period=%d,call-graph=fp/", PeriodNS),
		"-B", "-N", "-D", "-1", "--control", "fd:3,4", "-o", out}
}

// Profiler starts recordings of every CPU with perf.
type Profiler struct {
	Table *Table
	// Process names a PID's process; default: ProcessNames.
	Process func(pid int) string
	// Dir holds the recordings while they are read; default: the
	// system's temporary directory.
	Dir string
	// Path, if set, also times the measured messages between the
	// stages of their path (request/response workloads).
	Path *PathTracer
}

// Recording is perf recording every CPU, from Start until Stop.
type Recording struct {
	table   *Table
	process func(pid int) string
	stopped bool
	stopErr error
	cmd     *exec.Cmd
	ctl     *os.File
	ack     *bufio.Reader
	ackR    *os.File
	data    string
	errs    *bytes.Buffer
	done    chan error
	// tracing times the path; traceNote says why it does not.
	tracing   *Tracing
	traceNote string
}

// Start starts perf with its events off, turns them on and returns once
// perf has acknowledged: the recording covers what follows, not perf's
// own start-up.
func (p Profiler) Start(ctx context.Context) (*Recording, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	tidyOnce.Do(func() { _, _ = RemoveOrphanedRecordings(p.Dir) })
	// The tracer loads before perf starts, so that its loading is not
	// in the profile.
	var tracing *Tracing
	traceNote := ""
	if p.Path != nil {
		var err error
		if tracing, err = p.Path.Start(); err != nil {
			traceNote = err.Error()
		}
	}
	r, err := p.startPerf()
	if err != nil {
		if tracing != nil {
			tracing.Close()
		}
		return nil, err
	}
	r.tracing, r.traceNote = tracing, traceNote
	return r, nil
}

// startPerf starts perf and turns its events on.
func (p Profiler) startPerf() (*Recording, error) {
	f, err := os.CreateTemp(p.Dir, fmt.Sprintf("%s%d-*%s", recordingPrefix, os.Getpid(), recordingSuffix))
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	f.Close()
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("profile: %w", err)
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("profile: %w", err)
	}
	cmd := exec.Command("perf", recordArgs(f.Name())...)
	cmd.ExtraFiles = []*os.File{ctlR, ackW}
	errs := &bytes.Buffer{}
	cmd.Stderr = errs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		ctlR.Close()
		ctlW.Close()
		ackR.Close()
		ackW.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("profile: start perf: %w", err)
	}
	ctlR.Close()
	ackW.Close()
	process := p.Process
	if process == nil {
		process = ProcessNames()
	}
	r := &Recording{table: p.Table, process: process, cmd: cmd, ctl: ctlW, ack: bufio.NewReader(ackR), ackR: ackR, data: f.Name(), errs: errs, done: make(chan error, 1)}
	go func() { r.done <- cmd.Wait() }()
	if err := r.command("enable"); err != nil {
		r.ctl.Close()
		r.ackR.Close()
		r.abandon()
		return nil, err
	}
	return r, nil
}

// command sends perf one control command and waits for its ack.
func (r *Recording) command(what string) error {
	if _, err := io.WriteString(r.ctl, what+"\n"); err != nil {
		return r.failed(what, err)
	}
	got := make(chan error, 1)
	go func() {
		line, err := r.ack.ReadString('\n')
		// perf writes the ack with its C string's NUL, which then leads
		// the next one.
		if err == nil && strings.Trim(line, "\x00 \n") != "ack" {
			err = fmt.Errorf("answered %q", line)
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			return r.failed(what, err)
		}
		return nil
	case err := <-r.done:
		r.done <- err
		return r.failed(what, fmt.Errorf("perf exited: %v", err))
	case <-time.After(handshake):
		return r.failed(what, fmt.Errorf("no answer in %s", handshake))
	}
}

func (r *Recording) failed(what string, err error) error {
	return fmt.Errorf("profile: perf %s: %w%s", what, err, stderrTail(r.errs.Bytes()))
}

// Stop turns the events off and ends perf; Profile then reads what it
// recorded. Stop is cheap, so a sample's recording ends with its traffic.
func (r *Recording) Stop() error {
	if !r.stopped {
		r.stopped = true
		r.stopErr = r.stop()
		if r.tracing != nil {
			if err := r.tracing.Stop(); err != nil {
				r.traceNote = err.Error()
			}
		}
	}
	return r.stopErr
}

func (r *Recording) stop() error {
	defer r.ctl.Close()
	defer r.ackR.Close()
	if err := r.command("disable"); err != nil {
		r.abandon()
		return err
	}
	_ = r.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-r.done:
		if err != nil && !interrupted(err) {
			os.Remove(r.data)
			return fmt.Errorf("profile: perf record: %v%s", err, stderrTail(r.errs.Bytes()))
		}
	case <-time.After(handshake):
		r.abandon()
		return fmt.Errorf("profile: perf record did not end in %s", handshake)
	}
	return nil
}

// Profile stops the recording if it runs and attributes its stacks.
func (r *Recording) Profile() (model.Profile, error) {
	if err := r.Stop(); err != nil {
		return model.Profile{}, err
	}
	p, err := Read(r.data, r.table, r.process)
	if err != nil {
		return p, err
	}
	switch {
	case r.traceNote != "":
		p.Path = &model.PathLatency{Note: r.traceNote}
	case r.tracing != nil:
		lat := r.tracing.Latency()
		p.Path = &lat
	}
	return p, nil
}

// Close stops the recording if it runs and removes its file.
func (r *Recording) Close() {
	_ = r.Stop()
	os.Remove(r.data)
	if r.tracing != nil {
		r.tracing.Close()
	}
}

// abandon ends perf, by its PID, and removes what it wrote.
func (r *Recording) abandon() {
	_ = r.cmd.Process.Kill()
	<-r.done
	r.done <- nil
	os.Remove(r.data)
}

// Read attributes a recording's stacks with perf script.
func Read(data string, t *Table, process func(pid int) string) (model.Profile, error) {
	cmd := exec.Command("perf", "script", "-i", data, "-F", scriptFields)
	errs := &bytes.Buffer{}
	cmd.Stderr = errs
	out, err := cmd.StdoutPipe()
	if err != nil {
		return model.Profile{}, fmt.Errorf("profile: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return model.Profile{}, fmt.Errorf("profile: perf script: %w", err)
	}
	b := NewBuilder(t, process)
	parseErr := ParseScript(out, func(s Stack) error { b.Add(s); return nil })
	if parseErr != nil {
		_, _ = io.Copy(io.Discard, out)
	}
	if err := cmd.Wait(); err != nil {
		return model.Profile{}, fmt.Errorf("profile: perf script %s: %v%s", filepath.Base(data), err, stderrTail(errs.Bytes()))
	}
	if parseErr != nil {
		return model.Profile{}, fmt.Errorf("profile: %w", parseErr)
	}
	return b.Profile(), nil
}

// ProcessNames names processes by their command name (netns.Comm),
// remembering each so a process that has ended by the time its stacks
// are read keeps its name if it was asked for before.
func ProcessNames() func(pid int) string {
	names := map[int]string{0: "swapper"}
	return func(pid int) string {
		if n, ok := names[pid]; ok {
			return n
		}
		names[pid] = netns.Comm(pid)
		return names[pid]
	}
}

func interrupted(err error) bool {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGINT {
			return true
		}
	}
	return false
}

func stderrTail(b []byte) string {
	if s := lastLine(b, nil); s != "" {
		return ": " + s
	}
	return ""
}

func lastLine(b []byte, err error) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// A recording is named for the process that made it, so that one left by
// a process killed mid-sample can be told from one still being written.
const (
	recordingPrefix = "cnb-profile-"
	recordingSuffix = ".data"
)

var tidyOnce sync.Once

// RemoveOrphanedRecordings removes the recordings in dir (default: the
// system's temporary directory) of processes that are no longer alive,
// and returns their paths.
func RemoveOrphanedRecordings(dir string) ([]string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	removed, err := cleanup.RemoveOrphanFiles(dir, recordingPrefix, recordingSuffix)
	if err != nil {
		return removed, fmt.Errorf("profile recordings in %s: %w", dir, err)
	}
	return removed, nil
}
