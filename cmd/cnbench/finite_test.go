package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestNonFiniteNumbersAreRefused gives NaN and infinities where numbers
// go: each is bad input (exit 2), named by its flag, and no run is made.
func TestNonFiniteNumbersAreRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	for _, args := range [][]string{
		{"compare", "1", "2", "--fail-on-regression", "NaN", "--db", db},
		{"compare", "1", "2", "--alpha", "Inf", "--db", db},
		{"run", "--modes", "host", "--topologies", "chc", "--workloads", "udp_max_rate", "--loss-threshold", "NaN", "--db", db},
		{"run", "--modes", "host", "--topologies", "chc", "--workloads", "tcp_stream", "--target-ci", "-Inf", "--db", db},
		{"validate", "--throughput-threshold", "NaN"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "--") {
			t.Errorf("%q exits %d, want %d:\n%s", args, code, exitUsage, stderr)
		}
	}
	if code, stdout, _ := runCLI(t, "runs", "--db", db); code != 0 || strings.Contains(stdout, "adhoc") {
		t.Errorf("a run was stored: %d\n%s", code, stdout)
	}
}
