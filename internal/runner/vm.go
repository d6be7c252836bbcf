package runner

import (
	"fmt"
	"io"
	"os/exec"
	"sync"

	"cnbench/internal/cpu"
	"cnbench/internal/engine"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/netstat"
	"cnbench/internal/topo"
	"cnbench/internal/vm"
)

// guestSlot is the part of a slot whose endpoint sits inside a VM: its
// engine runs in the guest, started by the guest's agent, and the guest
// accounts its CPU time and interface counters.
type guestSlot struct {
	g    *vm.Guest
	name string
}

func guestSlotFor(ep *topo.Endpoint) *guestSlot {
	if ep.Host == nil || ep.Host.Guest == nil {
		return nil
	}
	return &guestSlot{g: ep.Host.Guest, name: ep.Name}
}

// startEngine starts the native engine in the guest and drives it over
// its virtio-serial port, with the same client as a local engine's pipes.
// The engine ends when the port closes, which is what stopping it does.
func (gs *guestSlot) startEngine(s *slot) (*nativeEngine, error) {
	if len(s.cpus) > 0 {
		return nil, fmt.Errorf("%w: placement pins this machine's CPUs; an engine in a VM runs on the guest's vCPUs", mode.ErrUnsupported)
	}
	conn, err := gs.g.StartEngine(gs.name)
	if err != nil {
		return nil, err
	}
	p := &proc{
		slot:   s,
		cmd:    exec.Command("cnbench engine in guest " + gs.g.Name),
		stdout: &limitedBuffer{max: 1 << 20},
		stderr: &limitedBuffer{max: 8192},
		waited: make(chan struct{}),
	}
	port := &guestPort{conn: conn, closed: p.waited}
	p.end = func() { _ = port.Close() }
	return &nativeEngine{proc: p, client: engine.NewClient(port, port)}, nil
}

func (gs *guestSlot) usage() (cpu.Usage, error) {
	user, system, err := gs.g.Usage(gs.name)
	return cpu.Usage{User: user, System: system}, err
}

func (gs *guestSlot) counters() (netstat.Counters, error) {
	links, err := gs.g.Counters(gs.name)
	return netstat.Sum(links, countsTraffic), err
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

// recordAccel records, with every case of a VM topology, how guests run
// here: numbers measured under TCG measure the emulator.
func recordAccel(c *model.Case, token netns.Token) {
	if topo.IsVM(c.Topology) && topo.VMAvailable() == nil {
		c.Params.Accel, _ = topo.Accelerator(token)
	}
}
