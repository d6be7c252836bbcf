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
)

// TestClosedPipeStopsARunCleanly runs cnbench with its output into a pipe
// whose reader goes away mid-sample, as `cnbench run ... 2>&1 | head`
// does: the run stops as a signal would stop it, exits 141 (128 +
// SIGPIPE), is stored as interrupted, and leaves no namespace behind.
func TestClosedPipeStopsARunCleanly(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	file := writeScenario(t, dir, "s.yaml", cleanupScenario)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", file, "--db", filepath.Join(dir, "r.db"))
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	token := ""
	sc := bufio.NewScanner(r)
	deadline := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		if m := regexp.MustCompile(`token ([0-9a-f]+)`).FindStringSubmatch(sc.Text()); m != nil {
			token = m[1]
		}
		if strings.Contains(sc.Text(), "sample 1/") {
			break
		}
	}
	r.Close()
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 141 {
		t.Errorf("exit code %d (%v) once the pipe closed, want 141", code, err)
	}
	if res := storedRun(t, filepath.Join(dir, "r.db"), 1); res.Run.Status != "interrupted" {
		t.Errorf("run stored as %s, want interrupted", res.Run.Status)
	}
	if token == "" {
		t.Fatal("the run never said its token")
	}
	left, _ := netns.List()
	for _, n := range left {
		if string(netns.TokenOf(n)) == token {
			t.Errorf("namespace %s left behind", n)
		}
	}
}
