package cleanup

import (
	"golang.org/x/sys/unix"

	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"cnbench/internal/netns"
)

// Daemon is a long-lived process a run started outside its engines, such
// as its own ovsdb-server, with the private directory it works in. Such a
// process normally dies with the run (parent-death signal) and lives in
// one of the run's namespaces, but a record makes sure a sweep finds it
// and its directory even so.
type Daemon struct {
	Name      string `json:"name"`
	PID       int    `json:"pid"`
	StartTick uint64 `json:"start_tick"`
	// Dir is removed with the daemon; it must be a cnbench directory.
	Dir string `json:"dir,omitempty"`
}

func daemonDir() string { return filepath.Join(StateDir, "daemons") }

func daemonPath(tok netns.Token, name string) string {
	return filepath.Join(daemonDir(), string(tok)+"-"+name+".json")
}

// RecordDaemon remembers a daemon of run tok under a name unique in the run.
func RecordDaemon(tok netns.Token, d Daemon) error {
	tick, err := startTick(d.PID)
	if err != nil {
		return fmt.Errorf("record daemon %s of run %s: %w", d.Name, tok, err)
	}
	d.StartTick = tick
	if err := os.MkdirAll(daemonDir(), 0o755); err != nil {
		return fmt.Errorf("record daemon %s of run %s: %w", d.Name, tok, err)
	}
	data, _ := json.Marshal(d)
	if err := os.WriteFile(daemonPath(tok, d.Name), data, 0o644); err != nil {
		return fmt.Errorf("record daemon %s of run %s: %w", d.Name, tok, err)
	}
	return nil
}

// StartDaemon forks cmd from a thread inside ns, so the daemon is born
// there, reaps it in the background (the returned channel closes when it
// has ended) and records it under tok so that a sweep can end it should
// the run die without stopping it. A record that cannot be written is an
// error, but the daemon has started: the caller must still stop it.
func StartDaemon(ns *netns.NS, cmd *exec.Cmd, tok netns.Token, name, dir string) (<-chan struct{}, error) {
	if err := ns.Do(cmd.Start); err != nil {
		return nil, fmt.Errorf("start %s in %q: %w", filepath.Base(cmd.Path), ns.Name, err)
	}
	waited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(waited)
	}()
	return waited, RecordDaemon(tok, Daemon{Name: name, PID: cmd.Process.Pid, Dir: dir})
}

// StopDaemon ends a daemon cnbench started, by its PID: SIGTERM lets it
// remove what it made; SIGKILL follows if it has not ended within grace.
// waited is closed once the process has been reaped.
func StopDaemon(p *os.Process, waited <-chan struct{}, grace time.Duration) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-waited:
	case <-time.After(grace):
		_ = p.Kill()
		<-waited
	}
}

// HowEnded says how a process ended: "(pid N) was killed by SIGKILL",
// "(pid N) exited with status 1".
func HowEnded(ps *os.ProcessState) string {
	if ps == nil {
		return "has ended"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("(pid %d) was killed by %s", ps.Pid(), unix.SignalName(ws.Signal()))
	}
	return fmt.Sprintf("(pid %d) exited with status %d", ps.Pid(), ps.ExitCode())
}

// ForgetDaemon drops the record of a daemon that has been stopped.
func ForgetDaemon(tok netns.Token, name string) error {
	err := os.Remove(daemonPath(tok, name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("forget daemon %s of run %s: %w", name, tok, err)
	}
	return nil
}

// Daemons lists the recorded daemons of run tok.
func Daemons(tok netns.Token) ([]Daemon, error) {
	files, _ := filepath.Glob(filepath.Join(daemonDir(), string(tok)+"-*.json"))
	var out []Daemon
	var errs []error
	for _, f := range files {
		var d Daemon
		data, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(data, &d)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read daemon record %s: %w", f, err))
			continue
		}
		out = append(out, d)
	}
	return out, errors.Join(errs...)
}

// Alive reports whether the daemon process still runs; a recycled PID
// has another start time.
func (d Daemon) Alive() bool {
	tick, err := startTick(d.PID)
	return err == nil && tick == d.StartTick
}

// IsOwnDir reports whether dir is a directory cnbench may remove: a
// direct child of the temporary directory whose name carries the prefix.
func IsOwnDir(dir string) bool {
	return filepath.Dir(dir) == filepath.Clean(os.TempDir()) && strings.HasPrefix(filepath.Base(dir), netns.Prefix+"-")
}

// daemonTokens are the run tokens that have daemon records.
func daemonTokens() []netns.Token {
	files, _ := filepath.Glob(filepath.Join(daemonDir(), "*.json"))
	var out []netns.Token
	for _, f := range files {
		tok, _, _ := strings.Cut(filepath.Base(f), "-")
		out = append(out, netns.Token(tok))
	}
	return out
}

// sweepDaemons kills the recorded daemons of a dead run, by PID and only
// if the PID is still the process recorded, and removes their
// directories and records.
func sweepDaemons(tok netns.Token, r *Removed) error {
	daemons, err := Daemons(tok)
	errs := []error{err}
	for _, d := range daemons {
		if d.Alive() && syscall.Kill(d.PID, syscall.SIGKILL) == nil {
			r.Processes = append(r.Processes, fmt.Sprintf("%d %s (daemon of run %s)", d.PID, d.Name, tok))
			netns.WaitGone(map[int]string{d.PID: d.Name}, 2*time.Second)
		}
		if d.Dir != "" && IsOwnDir(d.Dir) {
			errs = append(errs, os.RemoveAll(d.Dir))
		}
		errs = append(errs, ForgetDaemon(tok, d.Name))
	}
	return errors.Join(errs...)
}
