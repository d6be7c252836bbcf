// Package site is where an endpoint lives and how cnbench reaches it: a
// namespace on this machine, an endpoint inside a VM guest, or one on a
// remote machine or in a cluster's container, reached through the agent
// there. Each is one implementation of Site; drivers start engines and
// the measurement reads CPU time and counters through the interface
// alone, whatever the endpoint's home.
//
// A Path is what a case measures: its server and client sites, built by
// one of the placers (Local, Agents, Clusters) and removed by its Close.
package site

import (
	"context"
	"errors"
	"os/exec"
	"time"

	"cnbench/internal/cpu"
	"cnbench/internal/netstat"
	"cnbench/internal/topo"
)

// Site is one endpoint where it lives.
type Site interface {
	// Endpoint is the endpoint's name, address and, for sites on this
	// machine, namespace and host.
	Endpoint() *topo.Endpoint
	// Pin has the site's engine processes run on cpus; nil leaves them
	// to the scheduler. A site that cannot pin says so when its engine
	// starts.
	Pin(cpus []int)
	// CPUs are the CPUs the site pins to; nil when not pinned.
	CPUs() []int
	// Start starts a program in the endpoint. Sites on this machine start
	// any; an agent's, the external engines it vets (agent.ProgramNames),
	// without configure; a guest none. A site that cannot returns an
	// error wrapping ErrCannotRun. configure may attach pipes before the
	// start.
	Start(command []string, configure func(*exec.Cmd) error) (*Proc, error)
	// WaitListening waits up to limit until a socket of proto (tcp, udp)
	// listens on port in the endpoint, as a program's server does once it
	// is ready.
	WaitListening(ctx context.Context, proto string, port int, limit time.Duration) error
	// StartEngine starts cnbench's own engine in the endpoint; command is
	// how to run it on this machine.
	StartEngine(command []string) (*Engine, error)
	// Refuses returns an error wrapping ErrCannotRun if the engine here
	// cannot run workload, nil if it can.
	Refuses(workload string) error
	// Read reads the endpoint's CPU time and, with traffic, the kernel's
	// counters of its namespace.
	Read(traffic bool) (Reading, error)
	// Close removes what the site made for itself (a cgroup); the path
	// removes the endpoint.
	Close() error
}

// Sharer is a site on this machine whose sockets an engine started in
// another site can open, by entering its namespace (engine.RunSpec's
// Netns), so that one engine process serves many endpoints.
type Sharer interface {
	Site
	// NamespacePath is the file of the site's network namespace.
	NamespacePath() string
	// EngineHome names where the site's engine runs: sites with the same
	// home (one host, the same CPUs) may share an engine process.
	EngineHome() string
}

// Reading is one reading of a site.
type Reading struct {
	// CPU is the time the endpoint's processes used.
	CPU cpu.Usage
	// Links are the counters of the links that carry the endpoint's
	// traffic, and UDP the namespace's UDP counters, when traffic was
	// asked for and the site can read them.
	Links netstat.Counters
	UDP   netstat.UDP
	// Namespace tells sites apart that share one: endpoints of the host
	// mode are their host's namespace, whose counters count once.
	Namespace string
	// Machine is the CPU time of the machine the endpoint runs on, and
	// Host its name, where that machine is not this one; nil here.
	Machine *cpu.Machine
	Host    string
	// Kernel names the kernel whose CPU time Machine is, where known:
	// readings of one kernel under different host names (containers on
	// one node) count it once.
	Kernel string
	// Guest is set when that machine is a VM guest this machine runs:
	// its time adds to this machine's, which still counts (the guest's
	// host does the path's bridging, and its steal slows the guest).
	Guest bool
}

// ErrCannotRun marks a case an engine cannot run where its endpoints
// live; such a case is skipped, like one whose mode the machine lacks.
var ErrCannotRun = errors.New("the engine cannot run this case")
