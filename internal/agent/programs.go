package agent

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"cnbench/internal/agent/protocol"
	"cnbench/internal/cleanup"
	"cnbench/internal/cpu"
	"cnbench/internal/headbuf"
	"cnbench/internal/mode"
	"cnbench/internal/netstat"
	"cnbench/internal/topo"
)

// An option's value, as the agent checks it.
type valueKind int

const (
	noValue       valueKind = iota
	number                  // digits
	word                    // letters, digits and ,.:_- (no path, no space)
	address                 // an IP address the endpoint may use
	addressFamily           // ADDRESS,FAMILY (netserver -L)
)

// programOptions are the options each external engine may be given: those
// cnbench's drivers give it, and no other. None names a file, none
// daemonizes, and every address is checked, so that a program an agent
// starts writes nothing and sends nowhere but between the case's
// endpoints. Words are the first arguments a program takes as a
// subcommand (sockperf's); an operand is what a program takes last, after
// its options (ping's target).
var programOptions = map[string]struct {
	options  map[string]valueKind
	commands []string
	operand  valueKind
}{
	"iperf3": {options: map[string]valueKind{
		"--server": noValue, "--bind": address, "--port": number, "--client": address, "--json": noValue,
		"--time": number, "--parallel": number, "--length": number, "--connect-timeout": number,
		"--udp": noValue, "--bitrate": number, "--set-mss": number, "--window": number, "--congestion": word, "--no-delay": noValue,
	}},
	"netserver": {options: map[string]valueKind{"-D": noValue, "-f": noValue, "-L": addressFamily, "-p": number}},
	"netperf": {options: map[string]valueKind{
		"-H": address, "-p": number, "-4": noValue, "-6": noValue, "-l": number, "-P": word, "-a": word, "-A": word,
		"-j": noValue, "-t": word, "--": noValue, "-k": word, "-m": number, "-r": word, "-D": noValue,
		"-R": number,
	}},
	"sockperf": {options: map[string]valueKind{
		"-i": address, "-p": number, "--tcp": noValue, "-t": number, "-m": number, "--full-rtt": noValue, "--mps": word,
	}, commands: []string{"server", "ping-pong", "throughput"}},
	"ping": {options: map[string]valueKind{"-n": noValue, "-c": number, "-i": word, "-s": number, "-W": number}, operand: address},
}

var (
	digits   = regexp.MustCompile(`^[0-9]{1,12}$`)
	safeWord = regexp.MustCompile(`^[A-Za-z0-9,.:_-]{1,512}$`)
)

// ProgramNames are the external engines an agent may start.
func ProgramNames() []string {
	var names []string
	for name := range programOptions {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// installedPrograms are the external engines this machine has.
func installedPrograms() []string {
	var found []string
	for _, name := range ProgramNames() {
		if _, err := exec.LookPath(name); err == nil {
			found = append(found, name)
		}
	}
	return found
}

// vetProgram refuses a command line with an option cnbench's drivers do
// not give its program, or an address the endpoint may not use: its own
// (or any, for a server), cnbench's range and the case's peers.
func vetProgram(args []string, ep *endpoint) error {
	if len(args) == 0 {
		return refused("no program named")
	}
	rules, ok := programOptions[args[0]]
	if !ok {
		return refused("program %q: an agent starts %s only", args[0], strings.Join(ProgramNames(), ", "))
	}
	rest := args[1:]
	if len(rules.commands) > 0 {
		if len(rest) == 0 || !slices.Contains(rules.commands, rest[0]) {
			return refused("%s: expected one of %s first", args[0], strings.Join(rules.commands, ", "))
		}
		rest = rest[1:]
	}
	if rules.operand != noValue && len(rest) > 0 && !strings.HasPrefix(rest[len(rest)-1], "-") {
		if err := vetValue(rules.operand, rest[len(rest)-1], ep); err != nil {
			return refused("%s: %v", args[0], err)
		}
		rest = rest[:len(rest)-1]
	}
	for i := 0; i < len(rest); i++ {
		opt, value, inline := strings.Cut(rest[i], "=")
		kind, ok := rules.options[opt]
		if !ok || !strings.HasPrefix(opt, "-") {
			return refused("%s: argument %q is not one cnbench gives it", args[0], rest[i])
		}
		if kind == noValue {
			if inline {
				return refused("%s: %s takes no value", args[0], opt)
			}
			continue
		}
		if !inline {
			if i+1 == len(rest) {
				return refused("%s: %s needs a value", args[0], opt)
			}
			i++
			value = rest[i]
		}
		if err := vetValue(kind, value, ep); err != nil {
			return refused("%s %s: %v", args[0], opt, err)
		}
	}
	return nil
}

func vetValue(kind valueKind, value string, ep *endpoint) error {
	switch kind {
	case number:
		if !digits.MatchString(value) {
			return fmt.Errorf("%q is not a number", value)
		}
	case word:
		if !safeWord.MatchString(value) {
			return fmt.Errorf("%q holds more than letters, digits and ,.:_-", value)
		}
	case address, addressFamily:
		if kind == addressFamily {
			var family string
			value, family, _ = strings.Cut(value, ",")
			if family != "inet" && family != "inet6" {
				return fmt.Errorf("family %q: expected inet or inet6", family)
			}
		}
		a, err := netip.ParseAddr(value)
		if err != nil {
			return fmt.Errorf("%q is not an IP address", value)
		}
		if a != ep.ep.Addr && !a.IsUnspecified() && !topo.Pool.Contains(a) && !slices.Contains(ep.peers, a) {
			return fmt.Errorf("address %s: the endpoint's is %s, and targets must be in cnbench's range %s or the case's endpoints", a, ep.ep.Addr, topo.Pool)
		}
	}
	return nil
}

// programProc is an external engine an agent started for a session.
type programProc struct {
	id             string
	ep             *endpoint
	cmd            *exec.Cmd
	stdout, stderr *headbuf.Buffer
	waited         chan struct{}
}

// startProgram starts an external engine in an endpoint, as startEngine
// starts cnbench's own: born in the endpoint's namespace, moved into its
// cgroup, ended with the agent. Its output is kept for Wait.
func (s *session) startProgram(req protocol.ProgramRequest) (protocol.ProgramResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ep, err := s.endpointLocked(req.Endpoint)
	if err != nil {
		return protocol.ProgramResponse{}, err
	}
	if err := vetProgram(req.Args, ep); err != nil {
		return protocol.ProgramResponse{}, err
	}
	if len(s.programs) >= maxPrograms {
		return protocol.ProgramResponse{}, refused("session %s holds %d programs, running or not yet waited for", s.id, maxPrograms)
	}
	path, err := exec.LookPath(req.Args[0])
	if err != nil {
		return protocol.ProgramResponse{}, fmt.Errorf("%w: %s is not installed where the agent runs", mode.ErrUnsupported, req.Args[0])
	}
	cmd := exec.Command(path, req.Args[1:]...)
	cmd.Args[0] = req.Args[0]
	cmd.Dir = os.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p := &programProc{ep: ep, cmd: cmd, stdout: headbuf.New(1 << 20), stderr: headbuf.New(8 << 10), waited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := ep.start(cmd); err != nil {
		return protocol.ProgramResponse{}, fmt.Errorf("start %s in %s: %w", req.Args[0], ep.ep.Name, err)
	}
	s.nextID++
	p.id = fmt.Sprintf("p%d", s.nextID)
	go func() {
		_ = cmd.Wait()
		// The time of a program that ended stays the endpoint's: a
		// client's run ends before the sample's last reading.
		s.mu.Lock()
		ep.endedCPU.User += cmd.ProcessState.UserTime()
		ep.endedCPU.System += cmd.ProcessState.SystemTime()
		close(p.waited)
		s.mu.Unlock()
	}()
	if ep.cgroup != nil {
		if err := ep.cgroup.Add(cmd.Process.Pid); err != nil {
			// Killed by its PID; the goroutine above reaps it once this
			// call lets go of the session's lock, which it needs.
			_ = cmd.Process.Kill()
			return protocol.ProgramResponse{}, err
		}
	}
	s.programs[p.id] = p
	return protocol.ProgramResponse{Program: p.id, PID: cmd.Process.Pid}, nil
}

func (s *session) program(id string) (*programProc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: session %s ended", ErrNotFound, s.id)
	}
	p, ok := s.programs[id]
	if !ok {
		return nil, fmt.Errorf("%w: program %q in session %s", ErrNotFound, id, s.id)
	}
	return p, nil
}

// waitProgram waits for a program to end, at most the request's time-out
// (up to maxWait), and says how it did and what it wrote.
func (s *session) waitProgram(ctx context.Context, req protocol.WaitRequest) (protocol.WaitResponse, error) {
	if req.TimeoutMS < 0 || req.TimeoutMS > maxWait.Milliseconds() {
		return protocol.WaitResponse{}, refused("timeout_ms %d out of range 0..%d", req.TimeoutMS, maxWait.Milliseconds())
	}
	p, err := s.program(req.Program)
	if err != nil {
		return protocol.WaitResponse{}, err
	}
	timer := time.NewTimer(time.Duration(req.TimeoutMS) * time.Millisecond)
	defer timer.Stop()
	select {
	case <-p.waited:
	case <-timer.C:
		return protocol.WaitResponse{}, nil
	case <-ctx.Done():
		return protocol.WaitResponse{}, ctx.Err()
	}
	// Its output is handed over once, and its CPU time is the
	// endpoint's already: the session forgets it, so that a long case's
	// client runs do not pile up.
	s.mu.Lock()
	delete(s.programs, p.id)
	s.mu.Unlock()
	ps := p.cmd.ProcessState
	return protocol.WaitResponse{Ended: true, ExitCode: ps.ExitCode(), How: cleanup.HowEnded(ps),
		Stdout: p.stdout.String(), Stderr: p.stderr.String()}, nil
}

// stopProgram sends a program SIGTERM, and SIGKILL after grace.
func (s *session) stopProgram(id string, grace time.Duration) error {
	p, err := s.program(id)
	if err != nil {
		return err
	}
	p.stopWithin(grace)
	return nil
}

func (p *programProc) stopWithin(grace time.Duration) {
	select {
	case <-p.waited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.waited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.waited
	}
}

// listening waits until something listens on a port of the endpoint, as
// a program's server does once it is ready.
func (s *session) listening(ctx context.Context, req protocol.ListeningRequest) error {
	if req.TimeoutMS < 0 || req.TimeoutMS > maxWait.Milliseconds() {
		return refused("timeout_ms %d out of range 0..%d", req.TimeoutMS, maxWait.Milliseconds())
	}
	if req.Port < 1 || req.Port > 65535 || (req.Proto != "tcp" && req.Proto != "udp") {
		return refused("%s port %d: expected tcp or udp and a port in 1..65535", req.Proto, req.Port)
	}
	s.mu.Lock()
	ep, err := s.endpointLocked(req.Endpoint)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	// The container's own endpoint has no NS: netstat reads the agent's.
	return netstat.WaitListening(ctx, ep.ep.NS, req.Proto, req.Port, time.Duration(req.TimeoutMS)*time.Millisecond)
}

// livePIDs are the processes of the session's engines and running
// programs in ep, whose CPU time is read from /proc.
func (s *session) livePIDs(ep *endpoint) (pids []int, ended cpu.Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.engines {
		if e.ep == ep {
			pids = append(pids, e.cmd.Process.Pid)
		}
	}
	for _, p := range s.programs {
		select {
		case <-p.waited:
		default:
			if p.ep == ep {
				pids = append(pids, p.cmd.Process.Pid)
			}
		}
	}
	return pids, ep.endedCPU
}
