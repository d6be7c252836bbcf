package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/store"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
)

// liveRun is a cnbench run process started by a test, with what its
// progress output said.
type liveRun struct {
	cmd   *exec.Cmd
	done  chan error
	id    int64
	token netns.Token

	mu     sync.Mutex
	output bytes.Buffer
}

var runLine = regexp.MustCompile(`^run (\d+): .*, token (\S+)$`)

// startLive starts `bin run file --db db` and returns once the run's
// first sample is under way.
func startLive(t *testing.T, bin, file, db string) *liveRun {
	t.Helper()
	lr := &liveRun{cmd: exec.Command(bin, "run", file, "--db", db, "--format", "json"), done: make(chan error, 1)}
	stderr, err := lr.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := lr.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lr.cmd.Process.Kill() })
	sampling := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			lr.mu.Lock()
			lr.output.WriteString(sc.Text() + "\n")
			if m := runLine.FindStringSubmatch(sc.Text()); m != nil {
				lr.id, _ = strconv.ParseInt(m[1], 10, 64)
				lr.token = netns.Token(m[2])
			}
			lr.mu.Unlock()
			if !seen && strings.Contains(sc.Text(), "sample 1/") {
				seen = true
				close(sampling)
			}
		}
		lr.done <- lr.cmd.Wait()
	}()
	select {
	case <-sampling:
	case <-time.After(30 * time.Second):
		t.Fatalf("no sample started within 30s:\n%s", lr.said())
	}
	return lr
}

func (lr *liveRun) said() string {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.output.String()
}

// wait waits for the run to end by itself and requires success.
func (lr *liveRun) wait(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case err := <-lr.done:
		if err != nil {
			t.Fatalf("run %d: %v\n%s", lr.id, err, lr.said())
		}
	case <-time.After(limit):
		t.Fatalf("run %d did not finish within %v:\n%s", lr.id, limit, lr.said())
	}
}

// proc is a process as /proc shows it.
type proc struct {
	pid, ppid int
	argv      []string
	comm      string
}

// processes lists the machine's processes.
func processes() []proc {
	var out []proc
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			continue
		}
		p := proc{pid: pid}
		p.ppid, _ = strconv.Atoi(f[1])
		args, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		p.argv = strings.Split(strings.TrimSuffix(string(args), "\x00"), "\x00")
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		p.comm = strings.TrimSpace(string(comm))
		out = append(out, p)
	}
	return out
}

// isEngine reports whether a process runs cnbench's engine.
func (p proc) isEngine() bool { return len(p.argv) > 1 && p.argv[1] == "engine" }

// enginesOf lists the engine processes a run started: its children
// running `engine`.
func enginesOf(t *testing.T, pid int) []int {
	t.Helper()
	var out []int
	for _, p := range processes() {
		if p.ppid == pid && p.isEngine() {
			out = append(out, p.pid)
		}
	}
	return out
}

// gone reports whether a process has ended; a zombie has, it only waits
// for the reaper.
func gone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(stat)
	return strings.HasPrefix(s[strings.LastIndexByte(s, ')')+1:], " Z")
}

// listeners returns the local addresses of the listening TCP sockets and
// of every UDP socket in the network namespace of pid, from /proc/PID/net,
// which shows that namespace's sockets.
func listeners(t *testing.T, pid int) []netip.AddrPort {
	t.Helper()
	var out []netip.AddrPort
	for _, table := range []string{"tcp", "tcp6", "udp", "udp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || (strings.HasPrefix(table, "tcp") && f[3] != "0A") { // LISTEN
				continue
			}
			hexAddr, hexPort, _ := strings.Cut(f[1], ":")
			raw, err := hex.DecodeString(hexAddr)
			port, perr := strconv.ParseUint(hexPort, 16, 16)
			if err != nil || perr != nil || (len(raw) != 4 && len(raw) != 16) {
				t.Fatalf("/proc/%d/net/%s: cannot read %q", pid, table, f[1])
			}
			// The kernel prints each 32-bit word in host byte order.
			for i := 0; i < len(raw); i += 4 {
				binary.BigEndian.PutUint32(raw[i:], binary.NativeEndian.Uint32(raw[i:]))
			}
			addr, _ := netip.AddrFromSlice(raw)
			out = append(out, netip.AddrPortFrom(addr.Unmap(), uint16(port)))
		}
	}
	return out
}

func netnsInode(t *testing.T, pid string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+pid+"/ns/net", &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestEnginesConfinedAndDieWithRunner starts a real run and, while it
// measures, requires every engine process to live in a namespace of its
// own (not the root one) and every listening socket there to be bound to
// an address from cnbench's pool, never a wildcard. Then it kills the run
// with SIGKILL and requires every engine to be gone within two seconds,
// before any cleanup.
func TestEnginesConfinedAndDieWithRunner(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	file := writeScenario(t, dir, "s.yaml", cleanupScenario)
	lr := startLive(t, bin, file, filepath.Join(dir, "r.db"))
	engines := enginesOf(t, lr.cmd.Process.Pid)
	// The scenario's two modes take turns, each on its path, both up.
	if len(engines) != 4 {
		t.Fatalf("found engine processes %v, want a server and a client on each of the two modes' paths", engines)
	}

	rootNS := netnsInode(t, "self")
	var listening int
	for _, pid := range engines {
		if netnsInode(t, strconv.Itoa(pid)) == rootNS {
			t.Errorf("engine %d runs in the root network namespace", pid)
		}
		for _, ap := range listeners(t, pid) {
			listening++
			if ap.Addr().IsUnspecified() || !topo.Pool.Contains(ap.Addr()) {
				t.Errorf("engine %d's namespace listens on %s, outside cnbench's pool %s", pid, ap, topo.Pool)
			}
		}
	}
	if listening == 0 {
		t.Error("no listening socket in the engines' namespaces: the check saw nothing")
	}

	if err := lr.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-lr.done
	deadline := time.Now().Add(2 * time.Second)
	for _, pid := range engines {
		for !gone(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !gone(pid) {
			t.Errorf("engine %d outlived its killed runner by 2s", pid)
		}
	}
	if out, err := exec.Command(bin, "cleanup").CombinedOutput(); err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out)
	}
}

const concurrentScenario = `
name: concurrent
duration: 700ms
warmup: 0s
samples: 2
modes: [bridge, macvlan]
topologies: [chhc]
workloads: [tcp_stream]
`

// TestConcurrentRunsAndCleanup runs two real runs at once on one
// database, and a cleanup while both measure. The runs must have distinct
// ids and tokens, the cleanup must leave them alone, both must finish
// with every sample, and nothing may be left behind.
func TestConcurrentRunsAndCleanup(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	file := writeScenario(t, dir, "s.yaml", concurrentScenario)
	db := filepath.Join(dir, "shared.db")
	before := snapshot(t, bin)

	// The second starts while the first measures: both then measure at
	// once for seconds.
	a := startLive(t, bin, file, db)
	b := startLive(t, bin, file, db)
	runs := []*liveRun{a, b}
	if a.id == b.id || a.token == b.token || a.token == "" {
		t.Fatalf("runs share an id or a token: %d/%s and %d/%s", a.id, a.token, b.id, b.token)
	}

	out, err := exec.Command(bin, "cleanup").CombinedOutput()
	if err != nil {
		t.Fatalf("cleanup during the runs: %v\n%s", err, out)
	}
	for _, r := range runs {
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, string(r.token)) && !strings.HasPrefix(line, "left alone: run "+string(r.token)+" ") {
				t.Errorf("cleanup touched live run %d (token %s):\n%s", r.id, r.token, out)
			}
		}
		if !strings.Contains(string(out), "left alone: run "+string(r.token)+" ") {
			t.Errorf("cleanup did not say it left live run %d (token %s) alone:\n%s", r.id, r.token, out)
		}
		left, _ := netns.List()
		var mine int
		for _, n := range left {
			if netns.TokenOf(n) == r.token {
				mine++
			}
		}
		if mine == 0 {
			t.Errorf("run %d's namespaces are gone after the cleanup", r.id)
		}
	}

	for _, r := range runs {
		r.wait(t, 60*time.Second)
	}
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, r := range runs {
		res, err := st.LoadRun(r.id)
		if err != nil {
			t.Fatal(err)
		}
		if res.Run.Status != "done" || len(res.Cases) != 2 {
			t.Errorf("run %d: %s with %d cases, want done with 2", r.id, res.Run.Status, len(res.Cases))
		}
		for _, c := range res.Cases {
			if c.Status != model.StatusOK || len(c.Samples) != 2 {
				t.Errorf("run %d, case %s: %s with %d samples, want ok with 2 (%s)", r.id, c.Key, c.Status, len(c.Samples), c.Reason)
			}
		}
	}
	requireSame(t, "after two concurrent runs", before, snapshot(t, bin))
}

// TestSecondSignalEndsAtOnce sends a measuring run SIGINT and SIGTERM at
// once (two of one kind may reach it as one): the second ends the process
// at once, with the first's exit code and a word on cleanup, without
// waiting for the run to stop cleanly; cleanup then removes what it left.
func TestSecondSignalEndsAtOnce(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	file := writeScenario(t, dir, "s.yaml", cleanupScenario)
	lr := startLive(t, bin, file, filepath.Join(dir, "r.db"))
	lr.cmd.Process.Signal(syscall.SIGINT)
	lr.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-lr.done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || (exit.ExitCode() != 130 && exit.ExitCode() != 143) || !strings.Contains(lr.said(), "again: exiting now") {
			t.Errorf("after two signals: %v\n%s", err, lr.said())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("still running 5 s after two signals:\n%s", lr.said())
	}
	if out, err := exec.Command(bin, "cleanup").CombinedOutput(); err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out)
	}
}

// replacedScenario has two groups of cases, one workload each, measured
// one after the other: the second group's engines start after the test
// has replaced the binary.
const replacedScenario = `
name: replaced
duration: 500ms
warmup: 0s
samples: 2
modes: [veth]
topologies: [chc]
workloads: [tcp_stream, tcp_rr]
`

// TestBinaryReplacedMidRun replaces the binary a run was started from
// while the run measures, as an upgrade does: the old file is renamed,
// then removed, and a program that cannot be an engine takes its name.
// The engines started after that must still be the run's own build, so
// every case ends ok.
func TestBinaryReplacedMidRun(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "cnbench")
	built, err := os.ReadFile(buildBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, built, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "r.db")
	lr := startLive(t, bin, writeScenario(t, dir, "s.yaml", replacedScenario), db)

	if err := os.Rename(bin, bin+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(bin + ".old"); err != nil {
		t.Fatal(err)
	}
	impostor := "#!/bin/sh\necho 'not the run'\"'\"'s build' >&2\nexit 97\n"
	if err := os.WriteFile(bin, []byte(impostor), 0o755); err != nil {
		t.Fatal(err)
	}
	lr.wait(t, 90*time.Second)

	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := st.LoadRun(lr.id)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 2 {
		t.Fatalf("run %d has %d cases, want 2", lr.id, len(res.Cases))
	}
	for _, c := range res.Cases {
		if c.Status != model.StatusOK || len(c.Samples) != 2 {
			t.Errorf("case %s: %s with %d samples, want ok with 2 (%s)", c.Key, c.Status, len(c.Samples), c.Reason)
		}
	}
}
