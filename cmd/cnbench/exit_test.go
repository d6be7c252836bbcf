package main

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/modes"
	"cnbench/internal/store"
	"cnbench/internal/testutil"
	"cnbench/internal/topo"
)

// TestMain lets the test binary stand in for cnbench where a run in
// memory starts it again: as the engine inside endpoints, and as the
// spinners that keep CPUs awake.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "engine" || os.Args[1] == "awake") {
		os.Exit(execute(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// brokenReason is why the broken mode's endpoints cannot be built.
const brokenReason = "the broken mode cannot build an endpoint"

// brokenMode is a mode every case of which fails: its endpoints cannot be
// built, for a reason that is not a missing kernel feature.
type brokenMode struct{}

func (brokenMode) Endpoint(*topo.Host, string) (*topo.Endpoint, error) {
	return nil, errors.New(brokenReason)
}

func (brokenMode) Expose(*topo.Endpoint, int) (netip.AddrPort, error) {
	return netip.AddrPort{}, errors.New(brokenReason)
}

// withBrokenMode adds the broken mode to the mode table for one test. It
// applies to chc only, so that in chhc its cases are skipped.
func withBrokenMode(t *testing.T) {
	t.Helper()
	row := mode.Descriptor{
		Name: "broken", Summary: "a mode whose cases fail", Family: mode.Kernel, Available: mode.Always,
		Supports: func(topology string) error {
			if topology != topo.CHC {
				return mode.NotApplicable("the broken mode is tried in chc only")
			}
			return nil
		},
		New:       func(*topo.Topology) mode.Mode { return brokenMode{} },
		Addresses: topo.HostAddresses,
	}
	saved := modes.Table.Rows
	modes.Table.Rows = append(slices.Clip(saved), row)
	t.Cleanup(func() { modes.Table.Rows = saved })
}

// TestRunExitCodes runs real runs in memory and requires each exit code
// the documentation gives: 1 when a case failed, with the results still
// printed and stored; 0 with --allow-failures, and when every case was
// skipped; 2 for a scenario that does not parse.
func TestRunExitCodes(t *testing.T) {
	testutil.RequireRoot(t)
	withBrokenMode(t)
	dir := t.TempDir()
	short := []string{"--topologies", "chc", "--workloads", "tcp_rr", "--samples", "1", "--duration", "200ms", "--warmup", "0s", "--quiet", "--order", "sequential"}

	db := filepath.Join(dir, "failed.db")
	code, out, stderr := runCLI(t, append([]string{"run", "--modes", "host,broken", "--db", db}, short...)...)
	if code != exitFailure {
		t.Errorf("a run with a failed case exits %d, want %d:\n%s%s", code, exitFailure, out, stderr)
	}
	if !strings.Contains(stderr, "1 of 2 cases failed") || !strings.Contains(out, brokenReason) || !strings.Contains(out, " ok ") {
		t.Errorf("the failed run does not print its results and name its failed case:\n%s%s", out, stderr)
	}
	requireStoredStatuses(t, db, model.StatusOK, model.StatusFailed)

	code, out, stderr = runCLI(t, append([]string{"run", "--modes", "host,broken", "--db", db, "--allow-failures"}, short...)...)
	if code != exitOK || !strings.Contains(out, brokenReason) {
		t.Errorf("--allow-failures exits %d, want %d:\n%s%s", code, exitOK, out, stderr)
	}

	code, out, stderr = runCLI(t, "run", "--modes", "broken", "--topologies", "chhc", "--workloads", "tcp_rr", "--samples", "1",
		"--duration", "200ms", "--db", filepath.Join(dir, "skipped.db"), "--quiet")
	if code != exitOK || !strings.Contains(out, "skipped") {
		t.Errorf("a run with every case skipped exits %d, want %d:\n%s%s", code, exitOK, out, stderr)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("modes: [host\ntopologies: chc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr = runCLI(t, "run", bad, "--db", filepath.Join(dir, "bad.db")); code != exitUsage {
		t.Errorf("a scenario that is not YAML exits %d, want %d:\n%s", code, exitUsage, stderr)
	}
}

// requireStoredStatuses requires the latest run in db to hold cases of
// exactly these statuses, in its case order.
func requireStoredStatuses(t *testing.T, db string, want ...model.Status) {
	t.Helper()
	res := storedRun(t, db, 0)
	var got []model.Status
	for _, c := range res.Cases {
		got = append(got, c.Status)
	}
	if !slices.Equal(got, want) || res.Run.Status != "done" {
		t.Errorf("stored run %d: %s with cases %v, want done with %v", res.Run.ID, res.Run.Status, got, want)
	}
}

// storedRun loads run id (0: the latest) from the database at db.
func storedRun(t *testing.T, db string, id int64) *model.RunResult {
	t.Helper()
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if id == 0 {
		if id, err = st.LatestRunID(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := st.LoadRun(id)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestResumeExitCodes resumes the run of a failed case: resuming a
// complete run prints it again and exits as the run did.
func TestResumeExitCodes(t *testing.T) {
	testutil.RequireRoot(t)
	withBrokenMode(t)
	db := filepath.Join(t.TempDir(), "r.db")
	args := []string{"--topologies", "chc", "--workloads", "tcp_rr", "--samples", "1", "--duration", "200ms", "--warmup", "0s", "--quiet", "--db", db}
	if code, out, stderr := runCLI(t, append([]string{"run", "--modes", "host,broken"}, args...)...); code != exitFailure {
		t.Fatalf("run exits %d, want %d:\n%s%s", code, exitFailure, out, stderr)
	}
	if code, out, stderr := runCLI(t, "run", "--resume", "1", "--db", db, "--quiet"); code != exitFailure || !strings.Contains(out, brokenReason) {
		t.Errorf("resume of a run with a failed case exits %d, want %d:\n%s%s", code, exitFailure, out, stderr)
	}
	if code, _, stderr := runCLI(t, "run", "--resume", "1", "--db", db, "--quiet", "--allow-failures"); code != exitOK {
		t.Errorf("resume --allow-failures exits %d, want %d:\n%s", code, exitOK, stderr)
	}
	if code, _, stderr := runCLI(t, "run", "--resume", "7", "--db", db, "--quiet"); code != exitUsage {
		t.Errorf("resume of a run that does not exist exits %d, want %d:\n%s", code, exitUsage, stderr)
	}
}

// TestUsageExitCodes requires exit code 2 for every kind of command line
// that names no valid command, arguments or flags.
func TestUsageExitCodes(t *testing.T) {
	db := filepath.Join(t.TempDir(), "none.db")
	for _, args := range [][]string{
		{"nosuchcommand"},
		{"compare", "1"},
		{"report", "1", "2", "--db", db},
		{"report", "--format", "yaml", "--db", db},
		{"report", "x1", "--db", db},
		{"plot", "--kind", "nope", "-o", "x.svg", "--db", db},
		{"agent", "extra"},
		{"runs", "--no-such-flag"},
		{"validate", "--modes", "brigde"},
		{"validate", "--keep-cpus-awake=sometimes"},
	} {
		if code, _, stderr := runCLI(t, args...); code != exitUsage {
			t.Errorf("%q exits %d, want %d:\n%s", args, code, exitUsage, stderr)
		}
	}
}

// TestSignalExitCodes stops a real run, mid-sample, with each signal that
// ends it cleanly, and requires the shell's code for a death by that
// signal, with the run stored as interrupted.
func TestSignalExitCodes(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildBinary(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, exitInterrupted}, {syscall.SIGTERM, 143}, {syscall.SIGHUP, 129}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd, done := startRun(t, bin, dir)
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("cnbench did not stop within 20s of %v", tc.sig)
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("exit code %d after %v, want %d", code, tc.sig, tc.code)
			}
			if res := storedRun(t, filepath.Join(dir, "r.db"), 1); res.Run.Status != "interrupted" {
				t.Errorf("run stored as %s after %v, want interrupted", res.Run.Status, tc.sig)
			}
		})
	}
}
