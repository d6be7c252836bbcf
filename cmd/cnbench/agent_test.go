package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentCommandLine(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "agent", "init", "--dir", dir, "--name", "lab1", "--host", "198.18.200.1")
	if code != exitOK {
		t.Fatalf("agent init exited %d: %s", code, errOut)
	}
	for _, f := range []string{"ca.pem", "ca-key.pem", "controller.pem", "controller-key.pem", "lab1.pem", "lab1-key.pem"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("agent init did not write %s: %v", f, err)
		}
	}
	if !strings.Contains(out, "copy") {
		t.Errorf("agent init does not say what to copy where:\n%s", out)
	}
	for _, args := range [][]string{
		{"agent", "init", "--dir", dir, "--name", "lab2"},
		{"agent", "--listen", "198.18.200.1:7443", "--dir", dir, "--name", "lab1"},
		{"agent", "--parent", "nic0", "--dir", dir, "--name", "lab1"},
		{"agent", "--listen", "198.18.200.1:7443", "--parent", "nic0"},
	} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v exited %d, want %d", args, code, exitUsage)
		}
	}
}
