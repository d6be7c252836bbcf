package main

import (
	"bufio"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"cnbench/internal/model"
	"cnbench/internal/store/storetest"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
)

// faultsScenario runs one case per mode in order, each long enough for a
// process to be killed in its second sample.
const faultsScenario = `name: faults
duration: 2s
warmup: 0s
samples: 3
modes: [bridge, docker:bridge, ovs, veth]
topologies: [chc]
workloads: [tcp_stream]
`

// faultVictims says, by case number, which process of the run the test
// kills during the case's second sample: an engine, the case's private
// dockerd, its ovs-vswitchd. The fourth case is left alone.
var faultVictims = map[int]string{1: "engine", 2: "dockerd", 3: "ovs-vswitchd"}

var sampleLine = regexp.MustCompile(`^\[(\d+)/\d+\]\s+sample 2/`)

// TestFaultsMidSample kills, with SIGKILL, an engine, a private dockerd
// and an ovs-vswitchd while their cases measure. Each case is recorded
// failed with a reason that names what died, by name and PID; the run
// goes on, and its last case is ok; `cnbench cleanup` then finds nothing
// of cnbench's, and the machine is as before. Before, the reasons were
// "write |1: file already closed", "Cannot connect to the Docker daemon"
// and "i/o timeout", and the killed dockerd's containerd shims outlived
// the run and its cleanup.
func TestFaultsMidSample(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tool := range []string{"dockerd", "ovs-vswitchd", "ovsdb-server"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	runWithFaults(t, faultsScenario, 4, faultVictims)
}

// guestScenario runs a case with an endpoint in a guest, then one
// without.
const guestScenario = `name: guest-fault
duration: 2s
warmup: 0s
samples: 3
modes: [bridge]
topologies: [chvc, chc]
workloads: [tcp_rr]
`

// TestGuestKilledMidSample kills a guest's qemu while its case measures:
// the case fails naming qemu, the guest and how it ended, the next case
// is ok, and nothing is left. Before, the reason was the engine's broken
// connection, which did not say the guest was gone.
func TestGuestKilledMidSample(t *testing.T) {
	testutil.RequireRoot(t)
	if err := topo.VMAvailable(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	// The kernel truncates a command name to 15 characters.
	runWithFaults(t, guestScenario, 2, map[int]string{1: "qemu-system-x86"})
}

// runWithFaults runs a scenario of the cases given, in order, and
// SIGKILLs, in each case the victims name, the newest process of that
// name below the run during the case's second sample; then checks what
// the run recorded and left.
func runWithFaults(t *testing.T, scenario string, cases int, victims map[int]string) {
	t.Helper()
	bin := buildBinary(t)
	dir := t.TempDir()
	before, shims := snapshot(t, bin), cnbenchShims()
	file, db := writeScenario(t, dir, "faults.yaml", scenario), filepath.Join(dir, "faults.db")
	cmd := exec.Command(bin, "run", file, "--db", db, "--order", "sequential", "--pairing", "off")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	killed := map[int]int{} // case number: PID
	var said strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		said.WriteString(sc.Text() + "\n")
		m := sampleLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		victim, ok := victims[n]
		if !ok || killed[n] != 0 {
			continue
		}
		pid := descendant(cmd.Process.Pid, victim)
		if pid == 0 {
			t.Fatalf("case %d: no %s of the run to kill:\n%s", n, victim, said.String())
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed[n] = pid
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("run: %v (exit %d), want exit 1 for failed cases:\n%s", err, code, said.String())
	}

	res := storetest.LoadRun(t, db, 1)
	if len(res.Cases) != cases {
		t.Fatalf("%d cases, want %d", len(res.Cases), cases)
	}
	for i, c := range res.Cases {
		n := i + 1
		victim, hit := victims[n]
		switch {
		case !hit && c.Status != model.StatusOK:
			t.Errorf("case %d (%s), nothing killed: %s %s", n, c.Mode, c.Status, c.Reason)
		case hit && c.Status != model.StatusFailed:
			t.Errorf("case %d (%s), %s killed: %s, want failed", n, c.Mode, victim, c.Status)
		case hit:
			want := fmt.Sprintf("(pid %d) was killed by SIGKILL", killed[n])
			if !strings.Contains(c.Reason, want) || (victim != "engine" && !strings.Contains(c.Reason, victim)) {
				t.Errorf("case %d (%s), %s %d killed: the reason does not name it: %s", n, c.Mode, victim, killed[n], c.Reason)
			}
			t.Logf("case %d (%s/%s), %s killed: %s", n, c.Mode, c.Topology, victim, c.Reason)
		}
	}
	out, err := exec.Command(bin, "cleanup").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nothing to clean up") {
		t.Errorf("cleanup after the run: %v\n%s", err, out)
	}
	requireSame(t, "after the faults", before, snapshot(t, bin))
	for pid, args := range cnbenchShims() {
		if _, old := shims[pid]; !old {
			t.Errorf("a containerd shim of cnbench's outlived the run and its cleanup: %d %s", pid, args)
		}
	}
}

// descendant finds a process below pid: an engine, or one named comm;
// the newest, if there are several.
func descendant(pid int, comm string) int {
	procs := processes()
	parents := map[int]int{}
	for _, p := range procs {
		parents[p.pid] = p.ppid
	}
	below := func(p int) bool {
		for p > 1 {
			if p = parents[p]; p == pid {
				return true
			}
		}
		return false
	}
	// The newest: of a case's two engines the client's, started after
	// its server's, whose death ends the sample at once; a client whose
	// server dies waits out its socket's timeout.
	found := 0
	for _, p := range procs {
		if below(p.pid) && ((comm == "engine" && p.isEngine()) || p.comm == comm) {
			found = max(found, p.pid)
		}
	}
	return found
}

// cnbenchShims finds the containerd shims that serve a namespace of
// cnbench's containerds.
func cnbenchShims() map[int]string {
	out := map[int]string{}
	for _, p := range processes() {
		args := strings.Join(p.argv, " ")
		if strings.Contains(args, "containerd-shim") && strings.Contains(args, "-namespace cnb-") {
			out[p.pid] = args
		}
	}
	return out
}
