package site

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"time"

	"cnbench/internal/agent"
	"cnbench/internal/agent/protocol"
	"cnbench/internal/cpu"
	"cnbench/internal/topo"
)

// Remote is an endpoint on another machine, or in a cluster's container,
// reached through the agent there over an open session. The agent owns
// its cgroup and starts its engine; the machine's CPU time is read there.
type Remote struct {
	ep   *topo.Endpoint
	sess *agent.Session
	cpus []int
	// netns names the network namespace the endpoint shares with another
	// of its path, whose counters count once; empty for its own.
	netns string
	// refuses says why a workload cannot run on the path, beyond what
	// any agent refuses; nil where nothing more is refused.
	refuses func(workload string) error
	// node names the machine where that is not the agent's host name (a
	// container's is its own), so that two endpoints on one node read
	// its CPU time once.
	node string
}

var _ Site = (*Remote)(nil)

// placeRemote places an endpoint through an open session and makes it a
// site.
func placeRemote(ctx context.Context, s *agent.Session, req protocol.EndpointRequest) (*Remote, error) {
	ep, err := s.Endpoint(ctx, req.Mode, req.Name, req.Addr, req.Peers...)
	if err != nil {
		return nil, err
	}
	addr, err := netip.ParseAddr(ep.Addr)
	if err != nil {
		return nil, fmt.Errorf("endpoint %s: address %q: %w", req.Name, ep.Addr, err)
	}
	return &Remote{ep: &topo.Endpoint{Name: req.Name, Addr: addr}, sess: s}, nil
}

func (s *Remote) Endpoint() *topo.Endpoint { return s.ep }
func (s *Remote) Pin(cpus []int)           { s.cpus = cpus }
func (s *Remote) CPUs() []int              { return s.cpus }
func (s *Remote) Close() error             { return nil }

// Host is the name of the machine the endpoint runs on.
func (s *Remote) Host() string {
	if s.node != "" {
		return s.node
	}
	return s.sess.Info.Hostname
}

// Refuses all but the workloads whose results an agent's engine reports
// in full: an echo (ping) takes a program an agent does not start.
func (s *Remote) Refuses(workload string) error {
	if !slices.Contains(remoteWorkloads, workload) {
		return fmt.Errorf("%w: %s on endpoints placed by agents: they run %s", ErrCannotRun, workload, strings.Join(remoteWorkloads, ", "))
	}
	if s.refuses != nil {
		if err := s.refuses(workload); err != nil {
			return fmt.Errorf("%w: %v", ErrCannotRun, err)
		}
	}
	return nil
}

// remoteWorkloads are the workloads endpoints placed by agents run: the
// native engine's, whose echo is its own too.
var remoteWorkloads = []string{"tcp_stream", "tcp_rr", "tcp_crr", "udp_stream", "udp_max_rate", "udp_rr", "ping"}

// Start has the agent start an external engine in the endpoint and
// follows it until it ends; its output comes back then. The agent vets
// the command line, and starts only the programs it has.
func (s *Remote) Start(command []string, configure func(*exec.Cmd) error) (*Proc, error) {
	name := command[0]
	switch {
	case !slices.Contains(agent.ProgramNames(), name):
		return nil, fmt.Errorf("%w: %s on an agent's machine: agents start cnbench's own engine and %s", ErrCannotRun, name, strings.Join(agent.ProgramNames(), ", "))
	case !slices.Contains(s.sess.Info.Programs, name):
		return nil, fmt.Errorf("%w: %s is not installed where the agent of %s runs (in a cluster's pods: an image of `cnbench image --tools`)", ErrCannotRun, name, s.ep.Name)
	case configure != nil:
		return nil, fmt.Errorf("%w: %s on an agent's machine: its pipes stay there", ErrCannotRun, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	started, err := s.sess.StartProgram(ctx, s.ep.Name, command)
	if err != nil {
		return nil, fmt.Errorf("start %s in %s: %w", name, s.ep.Name, err)
	}
	p := newProc(&exec.Cmd{Args: command}, s.Host()+"/"+s.ep.Name)
	p.end = func() { _ = s.sess.StopProgram(started.Program, 0) }
	go func() {
		defer close(p.waited)
		for {
			w, err := s.sess.WaitProgram(context.Background(), started.Program, time.Minute)
			if err != nil {
				p.err, p.how = err, fmt.Sprintf("(pid %d) was lost: %v", started.PID, err)
				return
			}
			if w.Ended {
				_, _ = p.stdout.Write([]byte(w.Stdout))
				_, _ = p.stderr.Write([]byte(w.Stderr))
				p.how = w.How
				if w.ExitCode != 0 {
					p.err = errors.New(w.How)
				}
				return
			}
		}
	}()
	return p, nil
}

// WaitListening asks the agent to watch the endpoint's sockets.
func (s *Remote) WaitListening(ctx context.Context, proto string, port int, limit time.Duration) error {
	return s.sess.WaitListening(ctx, s.ep.Name, proto, port, limit)
}

// Expose publishes a port of the endpoint as its mode does there.
func (s *Remote) Expose(ctx context.Context, port int) (netip.AddrPort, error) {
	return s.sess.Expose(ctx, s.ep.Name, port)
}

// StartEngine has the agent start the engine in the endpoint and
// attaches to its control lines.
func (s *Remote) StartEngine([]string) (*Engine, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := s.sess.StartEngine(ctx, s.ep.Name)
	if err != nil {
		return nil, err
	}
	return &Engine{Client: e.Client, stop: func(grace time.Duration) { _ = e.Stop(grace) }}, nil
}

// Read asks the agent for the endpoint's CPU time, its namespace's link
// and UDP counters and its machine's softirq and steal time, in one call.
func (s *Remote) Read(bool) (Reading, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := s.sess.Usage(ctx, s.ep.Name)
	if err != nil {
		return Reading{}, err
	}
	ns := s.netns
	if ns == "" {
		ns = s.sess.Info.Session + "/" + s.ep.Name
	}
	return Reading{
		CPU:       cpu.Usage{User: time.Duration(u.UserNS), System: time.Duration(u.SystemNS)},
		Links:     sumTraffic(u.Links),
		UDP:       u.UDP,
		Namespace: ns,
		Machine:   &cpu.Machine{Busy: time.Duration(u.BusyNS), Softirq: time.Duration(u.SoftirqNS), Steal: time.Duration(u.StealNS)},
		Host:      s.Host(),
		Kernel:    s.sess.Info.BootID,
	}, nil
}
