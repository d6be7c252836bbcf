// Package testutil holds the skip helpers of privileged tests: a test that
// needs something this machine lacks says so and skips, it never passes
// silently.
package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// RequireRoot skips the test unless it runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to create network namespaces and links")
	}
}

// RequireTool skips the test unless the named program is on PATH.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("skipped: %s is not installed", name)
	}
	return path
}

// HasTool reports whether the named program is on PATH, for tests that
// check more where it is.
func HasTool(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}
