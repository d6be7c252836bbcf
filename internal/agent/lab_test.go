package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"cnbench/internal/agent"
	"cnbench/internal/cleanup"
	"cnbench/internal/cpu"
	"cnbench/internal/netns"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
)

// binary is a cnbench built for these tests: the agents and controllers
// run as real processes, as on real machines.
var binary string

func TestMain(m *testing.M) {
	code := func() int {
		if os.Geteuid() != 0 {
			return m.Run()
		}
		path, done, err := testutil.BuildCnbench()
		if err != nil {
			fmt.Fprintf(os.Stderr, "the agent tests run cnbench as processes: %v\n", err)
			return 1
		}
		defer done()
		binary = path
		return m.Run()
	}()
	os.Exit(code)
}

// lab is a set of emulated machines: namespaces whose NIC nic0 is plugged
// into one switch (a bridge in a namespace of its own), each with a
// management address 198.18.200.N/16. Agents run in machines; the
// controller runs in the machine "ctl". Everything is cnbench-prefixed
// and removed when the test ends.
type lab struct {
	t        *testing.T
	token    netns.Token
	machines map[string]*netns.NS
	addrs    map[string]netip.Addr
	certs    string
}

func newLab(t *testing.T, names ...string) *lab {
	t.Helper()
	testutil.RequireRoot(t)
	if binary == "" {
		t.Skip("skipped: the cnbench binary was not built")
	}
	l := &lab{t: t, token: netns.NewToken(), machines: map[string]*netns.NS{}, addrs: map[string]netip.Addr{}, certs: t.TempDir()}
	if err := cleanup.Claim(l.token); err != nil {
		t.Fatal(err)
	}
	var made []*netns.NS
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			if err := made[i].Delete(); err != nil {
				t.Error(err)
			}
		}
		if err := cleanup.Release(l.token); err != nil {
			t.Error(err)
		}
	})
	sw, err := netns.Create(l.token.Name("sw"))
	if err != nil {
		t.Fatal(err)
	}
	made = append(made, sw)
	swh, err := netlink.NewHandleAt(sw.Handle())
	if err != nil {
		t.Fatal(err)
	}
	defer swh.Close()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "sw0"}}
	if err := swh.LinkAdd(br); err != nil {
		t.Fatal(err)
	}
	if err := swh.LinkSetUp(br); err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		ns, err := netns.Create(l.token.Name(name))
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, ns)
		port := "p-" + name
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: port, MasterIndex: br.Attrs().Index}, PeerName: topo.NICName, PeerNamespace: netlink.NsFd(int(ns.Handle()))}
		if err := swh.LinkAdd(veth); err != nil {
			t.Fatal(err)
		}
		if err := swh.LinkSetUp(veth); err != nil {
			t.Fatal(err)
		}
		addr := netip.AddrFrom4([4]byte{198, 18, 200, byte(i + 1)})
		h, err := netlink.NewHandleAt(ns.Handle())
		if err != nil {
			t.Fatal(err)
		}
		nic, err := h.LinkByName(topo.NICName)
		if err == nil {
			err = h.AddrAdd(nic, &netlink.Addr{IPNet: topo.IPNet(netip.PrefixFrom(addr, 16))})
		}
		if err == nil {
			err = h.LinkSetUp(nic)
		}
		h.Close()
		if err != nil {
			t.Fatal(err)
		}
		l.machines[name], l.addrs[name] = ns, addr
	}
	return l
}

// agentAddr is where the agent of a machine listens.
func (l *lab) agentAddr(machine string) string {
	return netip.AddrPortFrom(l.addrs[machine], 7443).String()
}

// issue makes the agent's certificate in the lab's CA.
func (l *lab) issue(machine string) agent.Issued {
	l.t.Helper()
	is, err := agent.Init(l.certs, machine, []string{l.addrs[machine].String()})
	if err != nil {
		l.t.Fatal(err)
	}
	return is
}

// controllerCreds are the lab's controller credentials.
func (l *lab) controllerCreds() agent.Credentials {
	return agent.Credentials{CA: filepath.Join(l.certs, agent.CAFile), Cert: filepath.Join(l.certs, agent.ControllerFile), Key: filepath.Join(l.certs, agent.ControllerKeyFile)}
}

// process is a cnbench process started inside a lab machine.
type process struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	waited chan struct{}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start runs the cnbench binary with args from a thread inside machine's
// namespace, so the process is born there; it is killed, by its PID, when
// the test ends if it is still running.
func (l *lab) start(machine string, args ...string) *process {
	l.t.Helper()
	cmd := exec.Command(binary, args...)
	p := &process{cmd: cmd, out: &syncBuffer{}, waited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := l.machines[machine].Do(cmd.Start); err != nil {
		l.t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.waited)
	}()
	l.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-p.waited
	})
	return p
}

// startAgent runs an agent in machine and waits until it serves.
func (l *lab) startAgent(machine string, timeout time.Duration) *process {
	l.t.Helper()
	l.issue(machine)
	p := l.start(machine, "agent", "--listen", l.agentAddr(machine), "--parent", topo.NICName,
		"--dir", l.certs, "--name", machine, "--timeout", timeout.String())
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.out.String(), "listening on") {
		select {
		case <-p.waited:
			l.t.Fatalf("agent in %s ended: %s", machine, p.out)
		default:
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("agent in %s does not listen after 10s: %s", machine, p.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// wait waits for the process to end, at most limit.
func (p *process) wait(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case <-p.waited:
	case <-time.After(limit):
		t.Fatalf("%v did not end within %v; output:\n%s", p.cmd.Args, limit, p.out)
	}
}

// dialer opens connections from inside machine's namespace, for clients
// in this test process.
func (l *lab) dialer(machine string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
		err = l.machines[machine].Do(func() error {
			conn, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
}

var sessionToken = regexp.MustCompile(`session [0-9a-f]+ opened \(token ([0-9a-f]{4})`)

// agentTokens are the run tokens of the sessions an agent logged.
func agentTokens(p *process) []netns.Token { return agentTokensIn(p.out.String()) }

// agentTokensIn reads the sessions' tokens from what an agent logged.
func agentTokensIn(log string) []netns.Token {
	var out []netns.Token
	for _, m := range sessionToken.FindAllStringSubmatch(log, -1) {
		out = append(out, netns.Token(m[1]))
	}
	return out
}

// leftovers lists what exists of the agent's sessions: namespaces and
// cgroups named with their tokens, owner files, and the agent's child
// processes (its engines).
func leftovers(t *testing.T, agentPID int, tokens []netns.Token) []string {
	t.Helper()
	var out []string
	names, err := netns.List()
	if err != nil {
		t.Fatal(err)
	}
	hier, err := cpu.FindHierarchy()
	if err != nil {
		t.Fatal(err)
	}
	cgroups, err := hier.List(netns.Prefix + "-")
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range tokens {
		for _, n := range names {
			if netns.TokenOf(n) == tok {
				out = append(out, "namespace "+n)
			}
		}
		for _, c := range cgroups {
			if netns.TokenOf(c) == tok {
				out = append(out, "cgroup "+c)
			}
		}
		if _, err := os.Stat(filepath.Join(cleanup.StateDir, string(tok)+".json")); err == nil {
			out = append(out, "owner file of "+string(tok))
		}
	}
	for _, pid := range children(agentPID) {
		out = append(out, fmt.Sprintf("process %d", pid))
	}
	return out
}

// children are the live processes whose parent is pid.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		var child int
		if _, err := fmt.Sscanf(e.Name(), "%d", &child); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		var state string
		var ppid int
		if i < 0 {
			continue
		}
		if _, err := fmt.Sscanf(s[i+1:], " %s %d", &state, &ppid); err == nil && ppid == pid && state != "Z" {
			out = append(out, child)
		}
	}
	return out
}

// waitClean waits until the agent's sessions have left nothing, and
// returns how long that took; it fails the test after limit.
func waitClean(t *testing.T, agentPID int, tokens []netns.Token, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		left := leftovers(t, agentPID, tokens)
		if len(left) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("after %v the agent still holds: %s", limit, strings.Join(left, ", "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scenario writes a scenario file named name with body, and with a hosts
// section mapping h1 and h2 to the agents of m1 and m2 when onAgents.
func (l *lab) scenario(t *testing.T, name, body string, onAgents bool) string {
	t.Helper()
	doc := "name: " + name + "\n" + body
	if onAgents {
		c := l.controllerCreds()
		doc += "hosts:\n"
		for i, m := range []string{"m1", "m2"} {
			doc += fmt.Sprintf("  h%d: {agent: %q, ca: %q, cert: %q, key: %q}\n", i+1, l.agentAddr(m), c.CA, c.Cert, c.Key)
		}
	}
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var runToken = regexp.MustCompile(`cases, token ([0-9a-f]{4})`)

// releaseController removes the owner file a killed controller left, by
// the token its progress named.
func (l *lab) releaseController(p *process) {
	l.t.Helper()
	m := runToken.FindStringSubmatch(p.out.String())
	if m == nil {
		l.t.Fatalf("the controller named no run token:\n%s", p.out)
	}
	if err := cleanup.Release(netns.Token(m[1])); err != nil {
		l.t.Error(err)
	}
}
