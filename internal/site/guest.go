package site

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"cnbench/internal/cpu"
	"cnbench/internal/engine"
	"cnbench/internal/mode"
	"cnbench/internal/topo"
	"cnbench/internal/vm"
)

// Guest is an endpoint inside a VM: its engine runs in the guest, started
// by the guest's agent, and the guest accounts its CPU time and link
// counters. The VM's vCPUs are this machine's, so its machine time is
// this machine's.
type Guest struct {
	ep   *topo.Endpoint
	g    *vm.Guest
	cpus []int
}

var _ Site = (*Guest)(nil)

// NewGuest makes an endpoint on a VM host a site.
func NewGuest(ep *topo.Endpoint) *Guest { return &Guest{ep: ep, g: ep.Host.Guest} }

func (s *Guest) Endpoint() *topo.Endpoint { return s.ep }
func (s *Guest) Pin(cpus []int)           { s.cpus = cpus }
func (s *Guest) CPUs() []int              { return s.cpus }
func (s *Guest) Refuses(string) error     { return nil }
func (s *Guest) Close() error             { return nil }

// Start refuses: a guest carries only cnbench's own engine.
func (s *Guest) Start(command []string, _ func(*exec.Cmd) error) (*Proc, error) {
	return nil, fmt.Errorf("%w: %s inside a VM: guests carry only cnbench's own engine", ErrCannotRun, command[0])
}

// WaitListening refuses, as Start does.
func (s *Guest) WaitListening(context.Context, string, int, time.Duration) error {
	return fmt.Errorf("%w: a guest runs no program but cnbench's own engine", ErrCannotRun)
}

// Read asks the guest for the endpoint's CPU time, link counters and the
// guest's softirq time (its own /proc/stat), in one request.
func (s *Guest) Read(traffic bool) (Reading, error) {
	r := Reading{Namespace: "guest " + s.g.Name + "/" + s.ep.Name}
	u, err := s.g.Usage(s.ep.Name)
	r.CPU = cpu.Usage{User: time.Duration(u.UserNS), System: time.Duration(u.SystemNS)}
	// The guest's steal is left out: its vCPUs are this machine's
	// threads, and this machine's steal is what slows them.
	r.Machine = &cpu.Machine{Softirq: time.Duration(u.SoftirqNS)}
	r.Host, r.Guest = "guest "+s.g.Name, true
	if traffic {
		r.Links = sumTraffic(u.Links)
	}
	return r, err
}

// StartEngine starts the engine in the guest and drives it over its
// virtio-serial port, with the same client as a local engine's pipes.
// The engine ends when the port closes, which is what stopping it does.
func (s *Guest) StartEngine([]string) (*Engine, error) {
	if len(s.cpus) > 0 {
		return nil, fmt.Errorf("%w: placement pins this machine's CPUs; an engine in a VM runs on the guest's vCPUs", mode.ErrUnsupported)
	}
	conn, err := s.g.StartEngine(s.ep.Name)
	if err != nil {
		return nil, err
	}
	p := &guestPort{conn: conn, closed: make(chan struct{})}
	c := engine.NewClient(p, p)
	return &Engine{
		Client: c,
		stop: func(time.Duration) {
			_ = c.Quit()
			_ = p.Close()
		},
	}, nil
}

// guestPort is an engine's port; closing it is the engine's end, as its
// exit is a local engine's.
type guestPort struct {
	conn   io.ReadWriteCloser
	once   sync.Once
	closed chan struct{}
}

func (p *guestPort) Read(b []byte) (int, error)  { return p.conn.Read(b) }
func (p *guestPort) Write(b []byte) (int, error) { return p.conn.Write(b) }

func (p *guestPort) Close() error {
	var err error
	p.once.Do(func() {
		err = p.conn.Close()
		close(p.closed)
	})
	return err
}
