package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"cnbench/internal/agent/protocol"
	"cnbench/internal/cleanup"
	"cnbench/internal/cpu"
	"cnbench/internal/mode"
	"cnbench/internal/modes"
	"cnbench/internal/netns"
	"cnbench/internal/netstat"
	"cnbench/internal/selfexe"
	"cnbench/internal/topo"
)

// session is what one controller had the agent build for one case: a
// host, its endpoints with their cgroups, and their engines. Everything
// carries the session's own run token, which the agent claims as owner,
// so `cnbench cleanup` on this machine leaves a live agent's objects alone
// and removes those of a dead one.
type session struct {
	id      string
	token   netns.Token
	timeout time.Duration

	mu        sync.Mutex
	closed    bool
	topo      *topo.Topology
	mode      mode.Mode
	modeName  string
	endpoints map[string]*endpoint
	engines   map[string]*engineProc
	programs  map[string]*programProc
	nextID    int
	held      bool
}

type endpoint struct {
	ep     *topo.Endpoint
	cgName string
	cgroup *cpu.Cgroup // nil inside a container
	// self marks the container the agent runs in: its namespace is the
	// agent's own, which the agent may not leave or re-enter (setns needs
	// privileges a container lacks), and ep.NS is nil.
	self bool
	// peers are addresses outside cnbench's range the engine may send to.
	peers []netip.Addr
	// endedCPU is the CPU time of the endpoint's programs that ended,
	// counted where there is no cgroup to keep it.
	endedCPU cpu.Usage
}

// start starts cmd from a thread inside the endpoint's namespace, so the
// process is born there; the container's own endpoint is where the agent
// already is.
func (e *endpoint) start(cmd *exec.Cmd) error {
	if e.self {
		return cmd.Start()
	}
	return e.ep.NS.Do(cmd.Start)
}

type engineProc struct {
	id       string
	ep       *endpoint
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stdout   *bufio.Reader
	attached bool
	waited   chan struct{}
}

var endpointName = regexp.MustCompile(`^[a-z][a-z0-9]{0,5}$`)

// buildHost makes the session's host on the agent's parent NIC.
func (s *session) buildHost(a *Server, req protocol.HostRequest) (protocol.HostResponse, error) {
	if req.Topology != topo.CHHC {
		return protocol.HostResponse{}, fmt.Errorf("%w: topology %s: only %s spans machines through agents", mode.ErrUnsupported, req.Topology, topo.CHHC)
	}
	if req.Hosts < 2 || req.Hosts > maxHosts || req.Index < 1 || req.Index > req.Hosts {
		return protocol.HostResponse{}, refused("host %d of %d: expected 1 <= index <= hosts <= %d", req.Index, req.Hosts, maxHosts)
	}
	if req.MTU != 0 && (req.MTU < 576 || req.MTU > 65535) {
		return protocol.HostResponse{}, refused("mtu %d out of range 576..65535", req.MTU)
	}
	if req.NICRateBPS < 0 {
		return protocol.HostResponse{}, refused("nic_rate_bps %d is negative", req.NICRateBPS)
	}
	for _, o := range []string{req.GRO, req.GSO, req.TSO, req.TxChecksum} {
		if o != "" && o != "on" && o != "off" {
			return protocol.HostResponse{}, refused("offload %q: expected on, off or nothing", o)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return protocol.HostResponse{}, fmt.Errorf("%w: session %s ended", ErrNotFound, s.id)
	}
	if s.topo != nil {
		return protocol.HostResponse{}, refused("session %s has its host already", s.id)
	}
	parent, err := netlink.LinkByName(a.parent)
	if err != nil {
		return protocol.HostResponse{}, fmt.Errorf("find the parent NIC %s: %w", a.parent, err)
	}
	opts := topo.Options{NICRateBPS: req.NICRateBPS, MTU: req.MTU,
		Offloads: topo.Offloads{GRO: req.GRO, GSO: req.GSO, TSO: req.TSO, TxChecksum: req.TxChecksum}}
	t, err := topo.BuildOnParent(req.Topology, s.token, opts, req.Index, req.Hosts, parent)
	if errors.Is(err, topo.ErrNICLimit) {
		err = fmt.Errorf("%w: %w", mode.ErrUnsupported, err)
	}
	if err != nil {
		return protocol.HostResponse{}, err
	}
	s.topo = t
	h := t.Hosts[0]
	return protocol.HostResponse{Addr: h.Addr.String(), NS: h.NS.Name}, nil
}

// placeEndpoint places an endpoint of a registered mode on the host and
// gives it a cgroup.
func (s *session) placeEndpoint(a *Server, req protocol.EndpointRequest) (protocol.EndpointResponse, error) {
	if !endpointName.MatchString(req.Name) {
		return protocol.EndpointResponse{}, refused("endpoint name %q: expected a lower-case letter then up to 5 letters or digits", req.Name)
	}
	if a.container || req.Mode == protocol.ContainerMode {
		return s.placeSelf(a, req)
	}
	if req.Addr != "" || len(req.Peers) > 0 {
		return protocol.EndpointResponse{}, refused("addr and peers apply only to an agent inside a container")
	}
	d, ok := modes.Lookup(req.Mode)
	if !ok {
		return protocol.EndpointResponse{}, refused("unknown mode %q", req.Mode)
	}
	if err := d.Check(topo.CHHC); err != nil {
		return protocol.EndpointResponse{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return protocol.EndpointResponse{}, fmt.Errorf("%w: session %s ended", ErrNotFound, s.id)
	}
	if s.topo == nil {
		return protocol.EndpointResponse{}, refused("session %s has no host yet", s.id)
	}
	if _, dup := s.endpoints[req.Name]; dup || len(s.endpoints) >= maxEndpoints {
		return protocol.EndpointResponse{}, refused("endpoint %q exists, or the session holds %d already", req.Name, maxEndpoints)
	}
	if s.mode == nil {
		s.mode, s.modeName = d.New(s.topo), req.Mode
	} else if s.modeName != req.Mode {
		return protocol.EndpointResponse{}, refused("session %s builds mode %s, not %s", s.id, s.modeName, req.Mode)
	}
	ep, err := s.mode.Endpoint(s.topo.Hosts[0], req.Name)
	if err != nil {
		return protocol.EndpointResponse{}, err
	}
	if err := s.topo.ApplyOffloads(); err != nil {
		return protocol.EndpointResponse{}, err
	}
	if err := topo.SetOffloads(s.topo.Hosts[0].NS, s.topo.Opts.Offloads, topo.NICName); err != nil {
		return protocol.EndpointResponse{}, err
	}
	cgName := s.token.Name(req.Name)
	cg, err := a.hier.Create(cgName)
	if err != nil {
		return protocol.EndpointResponse{}, err
	}
	s.endpoints[req.Name] = &endpoint{ep: ep, cgName: cgName, cgroup: cg}
	return protocol.EndpointResponse{Addr: ep.Addr.String(), NS: ep.NS.Name}, nil
}

// placeSelf makes the container the agent runs in the session's one
// endpoint, at one of its own addresses.
func (s *session) placeSelf(a *Server, req protocol.EndpointRequest) (protocol.EndpointResponse, error) {
	if !a.container || req.Mode != protocol.ContainerMode {
		return protocol.EndpointResponse{}, refused("mode %q: an agent inside a container offers only %q, one on a machine never", req.Mode, protocol.ContainerMode)
	}
	addr, err := netip.ParseAddr(req.Addr)
	if err != nil {
		return protocol.EndpointResponse{}, refused("addr %q is not an IP address", req.Addr)
	}
	if !ownAddr(addr) {
		return protocol.EndpointResponse{}, refused("addr %s is not an address of this container", addr)
	}
	var peers []netip.Addr
	for _, p := range req.Peers {
		pa, err := netip.ParseAddr(p)
		if err != nil || pa.IsUnspecified() || pa.IsMulticast() {
			return protocol.EndpointResponse{}, refused("peer %q is not a unicast IP address", p)
		}
		peers = append(peers, pa)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return protocol.EndpointResponse{}, fmt.Errorf("%w: session %s ended", ErrNotFound, s.id)
	}
	if len(s.endpoints) > 0 {
		return protocol.EndpointResponse{}, refused("a container is one endpoint, and session %s has it", s.id)
	}
	s.mode = selfMode{}
	s.endpoints[req.Name] = &endpoint{ep: &topo.Endpoint{Name: req.Name, Addr: addr}, peers: peers, self: true}
	return protocol.EndpointResponse{Addr: addr.String(), NS: "container"}, nil
}

// ownAddr reports whether addr sits on an interface of this namespace.
func ownAddr(addr netip.Addr) bool {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if got, ok := netip.AddrFromSlice(a.IP); ok && got.Unmap() == addr {
			return true
		}
	}
	return false
}

// selfMode exposes a container's ports as they are: a cluster's network
// gives every task an address its peers reach directly.
type selfMode struct{}

func (selfMode) Endpoint(*topo.Host, string) (*topo.Endpoint, error) {
	return nil, refused("a container holds one endpoint")
}

func (selfMode) Expose(ep *topo.Endpoint, port int) (netip.AddrPort, error) {
	return netip.AddrPortFrom(ep.Addr, uint16(port)), nil
}

func (s *session) expose(req protocol.ExposeRequest) (protocol.ExposeResponse, error) {
	if req.Port < 1 || req.Port > 65535 {
		return protocol.ExposeResponse{}, refused("port %d out of range 1..65535", req.Port)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ep, err := s.endpointLocked(req.Endpoint)
	if err != nil {
		return protocol.ExposeResponse{}, err
	}
	target, err := s.mode.Expose(ep.ep, req.Port)
	if err != nil {
		return protocol.ExposeResponse{}, err
	}
	return protocol.ExposeResponse{Target: target.String()}, nil
}

func (s *session) endpointLocked(name string) (*endpoint, error) {
	if s.closed {
		return nil, fmt.Errorf("%w: session %s ended", ErrNotFound, s.id)
	}
	ep, ok := s.endpoints[name]
	if !ok {
		return nil, fmt.Errorf("%w: endpoint %q in session %s", ErrNotFound, name, s.id)
	}
	return ep, nil
}

// startEngine forks the agent's own executable as `engine` from a thread
// inside the endpoint's namespace, moves it into the endpoint's cgroup,
// and keeps its stdin and stdout for the controller to attach to. The
// parent-death signal ends it with the agent.
func (s *session) startEngine(a *Server, req protocol.EngineRequest) (protocol.EngineResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ep, err := s.endpointLocked(req.Endpoint)
	if err != nil {
		return protocol.EngineResponse{}, err
	}
	if len(s.engines) >= maxEngines {
		return protocol.EngineResponse{}, refused("session %s runs %d engines already", s.id, maxEngines)
	}
	cmd := selfexe.Exec(a.engine)
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return protocol.EngineResponse{}, fmt.Errorf("engine in %s: %w", ep.ep.Name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return protocol.EngineResponse{}, fmt.Errorf("engine in %s: %w", ep.ep.Name, err)
	}
	if err := ep.start(cmd); err != nil {
		return protocol.EngineResponse{}, fmt.Errorf("start the engine in %s: %w", ep.ep.Name, err)
	}
	s.nextID++
	e := &engineProc{id: fmt.Sprintf("e%d", s.nextID), ep: ep, cmd: cmd, stdin: stdin,
		stdout: bufio.NewReaderSize(stdout, 64<<10), waited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(e.waited)
	}()
	if ep.cgroup != nil {
		if err := ep.cgroup.Add(cmd.Process.Pid); err != nil {
			e.kill()
			return protocol.EngineResponse{}, err
		}
	}
	s.engines[e.id] = e
	return protocol.EngineResponse{Engine: e.id, PID: cmd.Process.Pid}, nil
}

// kill ends the engine by its PID and reaps it.
func (e *engineProc) kill() {
	select {
	case <-e.waited:
		return
	default:
	}
	_ = e.cmd.Process.Kill()
	<-e.waited
}

// stopWithin closes the engine's input, which ends it by itself, and
// kills it if it has not ended after grace.
func (e *engineProc) stopWithin(grace time.Duration) {
	_ = e.stdin.Close()
	select {
	case <-e.waited:
	case <-time.After(grace):
		e.kill()
	}
}

func (s *session) engine(id string) (*engineProc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: session %s ended", ErrNotFound, s.id)
	}
	e, ok := s.engines[id]
	if !ok {
		return nil, fmt.Errorf("%w: engine %q in session %s", ErrNotFound, id, s.id)
	}
	return e, nil
}

func (s *session) stopEngine(req protocol.StopRequest) error {
	if req.GraceMS < 0 || req.GraceMS > 60_000 {
		return refused("grace_ms %d out of range 0..60000", req.GraceMS)
	}
	if (req.Engine == "") == (req.Program == "") {
		return refused("name an engine or a program to stop, not %q and %q", req.Engine, req.Program)
	}
	if req.Program != "" {
		return s.stopProgram(req.Program, time.Duration(req.GraceMS)*time.Millisecond)
	}
	e, err := s.engine(req.Engine)
	if err != nil {
		return err
	}
	e.stopWithin(time.Duration(req.GraceMS) * time.Millisecond)
	return nil
}

func (s *session) usage(req protocol.UsageRequest) (protocol.UsageResponse, error) {
	s.mu.Lock()
	ep, err := s.endpointLocked(req.Endpoint)
	s.mu.Unlock()
	if err != nil {
		return protocol.UsageResponse{}, err
	}
	u, err := s.cpuUsage(ep)
	if err != nil {
		return protocol.UsageResponse{}, err
	}
	machine, err := cpu.ReadMachine()
	if err != nil {
		return protocol.UsageResponse{}, err
	}
	ns := ep.ep.NS // nil for the container itself: the agent's own
	links, err := netstat.ReadLinks(ns)
	if err != nil {
		return protocol.UsageResponse{}, err
	}
	udp, err := netstat.ReadUDP(ns)
	if err != nil {
		return protocol.UsageResponse{}, err
	}
	resp := protocol.UsageResponse{UserNS: u.User.Nanoseconds(), SystemNS: u.System.Nanoseconds(), SoftirqNS: machine.Softirq.Nanoseconds(), StealNS: machine.Steal.Nanoseconds(),
		BusyNS: machine.Busy.Nanoseconds(), Links: links, UDP: udp}
	return resp, nil
}

// close removes everything the session made, in the reverse order of
// making: engines (by PID), cgroups, then the namespaces with every link,
// address and route in them, and the claim on the token. It goes on past
// errors and is safe to call more than once.
func (s *session) close(a *Server) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	engines, programs, endpoints, t := s.engines, s.programs, s.endpoints, s.topo
	s.mu.Unlock()
	var errs []error
	for _, e := range engines {
		e.stopWithin(200 * time.Millisecond)
	}
	for _, p := range programs {
		p.stopWithin(200 * time.Millisecond)
	}
	for _, ep := range endpoints {
		if ep.cgName != "" {
			errs = append(errs, a.hier.Remove(ep.cgName))
		}
	}
	if t != nil {
		errs = append(errs, t.Close())
	}
	if s.token != "" {
		errs = append(errs, cleanup.Release(s.token))
	}
	return errors.Join(errs...)
}

// checkEngineLine decides whether a control line from the controller may
// reach the engine: only listens on the endpoint's own address and runs
// against cnbench's benchmark range, so an engine on this machine never
// sends a byte outside cnbench's namespaces.
func checkEngineLine(req engineLine, ep *topo.Endpoint, peers []netip.Addr) error {
	switch {
	case req.netns != "":
		return refused("sockets in namespace %s: an agent's engine serves its own endpoint only", req.netns)
	case req.listenAddr.IsValid():
		if req.listenAddr != ep.Addr && !req.listenAddr.IsUnspecified() {
			return refused("listen on %s: the endpoint's address is %s", req.listenAddr, ep.Addr)
		}
	case req.target.IsValid():
		if !topo.Pool.Contains(req.target.Addr()) && !slices.Contains(peers, req.target.Addr()) {
			return refused("run against %s: targets must be in cnbench's range %s or the case's endpoints", req.target, topo.Pool)
		}
	}
	return nil
}

// cpuUsage is the endpoint's CPU time: its cgroup's on a machine; inside a
// container, where cgroups are read-only, the sum over the session's
// engines and programs there, with their descendants, each read from
// /proc while it runs and from its exit status once it ended.
func (s *session) cpuUsage(ep *endpoint) (cpu.Usage, error) {
	if ep.cgroup != nil {
		return ep.cgroup.Usage()
	}
	for tries := 0; ; tries++ {
		pids, total := s.livePIDs(ep)
		u, err := treeCPU(pids)
		total = total.Add(u)
		// A program that ended between the listing and its reading
		// counts as ended once reaped, a moment later.
		if err == nil || tries == 20 {
			return total, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procStat is what cnbench reads of /proc/PID/stat: the parent, and the
// user and system time of the process (all its threads) and of its
// children it reaped, in clock ticks.
type procStat struct {
	ppid                         int
	utime, stime, cutime, cstime int64
}

func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	var st procStat
	var errs [5]error
	st.ppid, errs[0] = strconv.Atoi(f[1])
	st.utime, errs[1] = strconv.ParseInt(f[11], 10, 64)
	st.stime, errs[2] = strconv.ParseInt(f[12], 10, 64)
	st.cutime, errs[3] = strconv.ParseInt(f[13], 10, 64)
	st.cstime, errs[4] = strconv.ParseInt(f[14], 10, 64)
	if err := errors.Join(errs[:]...); err != nil {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// treeCPU is the CPU time of the processes pids and of all their
// descendants: those running, and those reaped, whose time their
// parents' reaped-children times hold. netserver serves each test from a
// child of its own.
func treeCPU(pids []int) (cpu.Usage, error) {
	children := map[int][]int{}
	stats := map[int]procStat{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return cpu.Usage{}, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil {
			continue // it ended while the others were read
		}
		stats[pid] = st
		children[st.ppid] = append(children[st.ppid], pid)
	}
	var total cpu.Usage
	for _, root := range pids {
		if _, ok := stats[root]; !ok {
			return cpu.Usage{}, fmt.Errorf("read CPU time of process %d: it has ended", root)
		}
		for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
			total = total.Add(processCPU(queue[0], stats[queue[0]]))
			queue = append(queue, children[queue[0]]...)
		}
	}
	return total, nil
}

// tick is a clock tick of /proc/PID/stat: 1/100 s wherever Linux exports
// them.
const tick = 10 * time.Millisecond

// processCPU is the CPU time of one process, its ended threads included,
// and of the children it reaped. /proc/PID/stat counts in whole ticks,
// which leaves a side that worked 8 ms of a 1 s sample at 0%; the
// process's CPU clock counts nanoseconds, and is split into user and
// system time as the ticks split it (the kernel's own cputime_adjust
// does the same). Reaped children are known in ticks only.
func processCPU(pid int, st procStat) cpu.Usage {
	u := cpu.Usage{User: time.Duration(st.utime+st.cutime) * tick, System: time.Duration(st.stime+st.cstime) * tick}
	var ts unix.Timespec
	// The clock of process pid, in its scheduler's nanoseconds:
	// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) of the kernel's headers.
	if err := unix.ClockGettime(int32((^pid)<<3|2), &ts); err != nil {
		return u // it ended since its stat was read: its ticks stand
	}
	own := time.Duration(ts.Nano())
	var user time.Duration // before its first tick, all of it counts as system
	if ticks := st.utime + st.stime; ticks > 0 {
		user = time.Duration(float64(own) * float64(st.utime) / float64(ticks))
	}
	return cpu.Usage{User: user + time.Duration(st.cutime)*tick, System: own - user + time.Duration(st.cstime)*tick}
}

// engineLine is what checkEngineLine needs of a control request.
type engineLine struct {
	listenAddr netip.Addr
	target     netip.AddrPort
	// netns names a namespace for the engine's sockets; an agent's
	// engines serve their own endpoint only.
	netns string
}
