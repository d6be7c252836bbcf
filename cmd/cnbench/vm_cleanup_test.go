package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cnbench/internal/netns"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
)

// TestVMDiesWithTheRunAndCleanupRemovesTheRest kills a run mid-sample in
// a VM topology: qemu must die with it (its parent-death signal), and
// cleanup must remove the run's namespaces (with the guest's tap) and its
// image and guest directories.
func TestVMDiesWithTheRunAndCleanupRemovesTheRest(t *testing.T) {
	testutil.RequireRoot(t)
	if err := topo.VMAvailable(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--db", filepath.Join(dir, "r.db"), "--modes", "bridge", "--topologies", "cvc",
		"--workloads", "tcp_rr", "--samples", "5", "--duration", "2s", "--warmup", "0s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tokenRE := regexp.MustCompile(`token ([0-9a-f]{4})`)
	var tok netns.Token
	sampling := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := tokenRE.FindStringSubmatch(sc.Text()); m != nil && tok == "" {
				tok = netns.Token(m[1])
			}
			if strings.Contains(sc.Text(), "sample 1/") {
				close(sampling)
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-sampling:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("no sample started within 90 s")
	}
	qemus := qemuOf(tok)
	if len(qemus) == 0 {
		t.Fatalf("no qemu of run %s found mid-sample", tok)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for len(qemuOf(tok)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := qemuOf(tok); len(left) > 0 {
		t.Errorf("qemu %v outlived the run", left)
	}
	if dirs := tempDirsOf(tok); len(dirs) == 0 {
		t.Errorf("the killed run left no guest directory to clean up; the test proves nothing")
	}
	out, err := exec.Command(bin, "cleanup").CombinedOutput()
	if err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out)
	}
	t.Logf("cleanup said:\n%s", out)
	if dirs := tempDirsOf(tok); len(dirs) > 0 {
		t.Errorf("cleanup left %v", dirs)
	}
	names, _ := netns.List()
	for _, n := range names {
		if netns.TokenOf(n) == tok {
			t.Errorf("cleanup left namespace %s", n)
		}
	}
}

// qemuOf lists the qemu processes whose command line names the run.
func qemuOf(tok netns.Token) []string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(cmdline), "qemu-system") && strings.Contains(string(cmdline), tok.Name("")) {
			out = append(out, p.Name())
		}
	}
	return out
}

func tempDirsOf(tok netns.Token) []string {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tok.Name("*")))
	return dirs
}
