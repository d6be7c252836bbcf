package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildCnbench builds the cnbench command into a fresh temporary
// directory, for tests that run it as real processes (agents,
// controllers, containers' engines). cleanup removes the directory.
func BuildCnbench() (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "cnbench-test-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	path = filepath.Join(dir, "cnbench")
	if out, err := exec.Command("go", "build", "-o", path, "cnbench/cmd/cnbench").CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build cnbench: %w\n%s", err, out)
	}
	return path, cleanup, nil
}
