package agent_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cnbench/internal/model"
	"cnbench/internal/topo"
)

// unitFile is the systemd unit cnbench ships for its agent.
const unitFile = "../../configs/systemd/cnbench-agent.service"

// TestAgentAsASystemdService checks the shipped unit with systemd's own
// verifier, then runs m1's agent as systemd runs the unit's ExecStart:
// systemd's default environment and nothing else, standard input from
// /dev/null, output to a pipe (the journal's), working directory /, in a
// cgroup of the service's own, and stopped with KillMode=mixed, SIGTERM
// to the agent and then SIGKILL to whatever is left in the service's
// cgroup. A run through it and a plain agent measures every case; the
// stop ends the agent within the unit's TimeoutStopSec, with status 0,
// its cgroup empty and nothing of its sessions left. systemd is not PID 1
// on every machine the suite runs on, so the service manager's part is
// done by the test.
func TestAgentAsASystemdService(t *testing.T) {
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	l := newLab(t, "m1", "m2", "ctl")
	l.issue("m1")
	args := []string{binary, "agent", "--listen", l.agentAddr("m1"), "--parent", topo.NICName, "--dir", l.certs, "--name", "m1", "--timeout", "5s"}
	verifyUnit(t, string(unit), args)

	cg := filepath.Join("/sys/fs/cgroup/unified", l.token.Name("agent.service"))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Skipf("skipped: no cgroup2 hierarchy to give the service a cgroup of its own: %v", err)
	}
	t.Cleanup(func() { os.Remove(cg) })
	dir, err := os.Open(cg)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	cmd := exec.Command(args[0], args[1:]...)
	// systemd 252's default environment for system services.
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "INVOCATION_ID=" + string(l.token)}
	cmd.Dir = "/"
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, UseCgroupFD: true, CgroupFD: int(dir.Fd()), Pdeathsig: syscall.SIGKILL}
	if err := l.machines["m1"].Do(cmd.Start); err != nil {
		t.Fatal(err)
	}
	journal := &syncBuffer{}
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		once := false
		for sc.Scan() {
			journal.Write([]byte(sc.Text() + "\n"))
			if !once && strings.Contains(sc.Text(), "listening on") {
				once = true
				close(listening)
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("the service's journal:\n%s", journal)
		}
	})
	select {
	case <-listening:
	case err := <-exited:
		t.Fatalf("the service ended: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the service does not listen after 20s")
	}
	plain := l.startAgent("m2", 5*time.Second)
	res := l.run(t, l.scenario(t, "service", "modes: [host, bridge]\ntopologies: [chhc]\nworkloads: [tcp_rr]\nduration: 500ms\nwarmup: 0s\nsamples: 1\n", true))
	for _, c := range res.Cases {
		if c.Status != model.StatusOK || c.Params.ServerNode == "" {
			t.Errorf("%s: %s %s (server node %q); the plain agent said:\n%s", c.Key, c.Status, c.Reason, c.Params.ServerNode, plain.out)
		}
	}
	tokens := agentTokensIn(journal.String())
	if len(tokens) != len(res.Cases) {
		t.Errorf("the service logged %d sessions, want one per case (%d)", len(tokens), len(res.Cases))
	}

	// systemctl stop with KillMode=mixed.
	stopped := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the service's main process ended with %v, want status 0", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the service did not stop within the unit's TimeoutStopSec")
	}
	t.Logf("stopped in %v", time.Since(stopped).Round(time.Millisecond))
	if procs, _ := os.ReadFile(filepath.Join(cg, "cgroup.procs")); len(strings.TrimSpace(string(procs))) > 0 {
		t.Errorf("left in the service's cgroup, for systemd to kill: %s", procs)
	}
	if left := leftovers(t, cmd.Process.Pid, tokens); len(left) != 0 {
		t.Errorf("the stopped service left: %v", left)
	}
}

// verifyUnit runs systemd-analyze verify on the shipped unit with its
// ExecStart set to args: it must find nothing to say.
func verifyUnit(t *testing.T, unit string, args []string) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Logf("systemd-analyze is not installed: the unit file is not verified")
		return
	}
	var lines []string
	for _, line := range strings.Split(unit, "\n") {
		if strings.HasPrefix(line, "ExecStart=") {
			line = "ExecStart=" + strings.Join(args, " ")
		}
		lines = append(lines, line)
	}
	path := filepath.Join(t.TempDir(), "cnbench-agent.service")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unitFile, err, out)
	}
}
