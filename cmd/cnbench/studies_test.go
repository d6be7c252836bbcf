package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cnbench/suites"
)

// studySuites are the built-in suites that reproduce the studies in
// docs/reproductions.md.
var studySuites = []string{"zhao2017", "zhao2017-udp", "zhao2017-vm", "docker-icc", "contrail-win", "hoysala", "zhang-macvlan-ipvlan"}

// TestStudySuitesRunQuick runs every study suite in its quick form on real
// namespaces: the run must end, and every case must be ok, or skipped with
// a reason. Every case is measured once and briefly, so that the seven
// suites fit in the test suite's time on a two-core machine; the --quick
// promise to users (each suite under two minutes) is measured by hand and
// recorded in docs/reproductions.md.
func TestStudySuitesRunQuick(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs create network namespaces")
	}
	if testing.Short() {
		t.Skip("-short: runs seven suites on real namespaces")
	}
	t.Parallel() // it holds the suites to running, not to numbers: it runs beside the other tests that do
	// A real binary, not the CLI in memory: the runner starts its own
	// executable as the engine, and the test binary is not one.
	bin := buildBinary(t)
	for _, name := range studySuites {
		if _, _, ok := suites.Lookup(name); !ok {
			t.Errorf("suite %s is not built in", name)
		}
	}
	// Three lanes at once: the VM suite spends most of its time booting
	// guests, the others building namespaces, and the two longest of
	// those (about 40 s each) go apart; together they take about half as
	// long as one after the other.
	lanes := map[string][]string{"vm": {"zhao2017-vm"}, "udp": {"zhao2017-udp", "docker-icc"}}
	for _, name := range studySuites {
		if !slices.Contains(lanes["vm"], name) && !slices.Contains(lanes["udp"], name) {
			lanes["hosts"] = append(lanes["hosts"], name)
		}
	}
	for lane, names := range lanes {
		t.Run(lane, func(t *testing.T) {
			t.Parallel()
			for _, name := range names {
				runStudyQuick(t, bin, name)
			}
		})
	}
}

func runStudyQuick(t *testing.T, bin, name string) {
	t.Run(name, func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "r.db")
		start := time.Now()
		out, err := exec.Command(bin, "run", name, "--quick", "--samples", "1", "--duration", "200ms", "--warmup", "0s", "--db", db, "--quiet", "--format", "csv").CombinedOutput()
		t.Logf("%s quick (1 sample of 200 ms): %v", name, time.Since(start).Round(time.Second))
		if err != nil {
			t.Fatalf("run %s --quick: %v\n%s\nfailed cases: %s", name, err, out, failedReasons(t, db))
		}
		code, rep0, stderr := runCLI(t, "report", "--db", db, "--format", "json")
		if code != 0 {
			t.Fatalf("report: exit %d\n%s", code, stderr)
		}
		var rep struct {
			Run struct {
				Scenario, Status string
			}
			Cases []struct {
				Key, Status, Reason string
				Metrics             map[string]any
			}
		}
		if err := json.Unmarshal([]byte(rep0), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Run.Scenario != name+"-quick" || rep.Run.Status != "done" {
			t.Errorf("run is %q, %s; want %s-quick, done", rep.Run.Scenario, rep.Run.Status, name)
		}
		ok := 0
		for _, c := range rep.Cases {
			switch {
			case c.Status == "ok" && len(c.Metrics) > 0:
				ok++
			case c.Status == "skipped" && strings.TrimSpace(c.Reason) != "":
				t.Logf("skipped %s: %s", c.Key, c.Reason)
			default:
				t.Errorf("%s: %s (%s), %d metrics", c.Key, c.Status, c.Reason, len(c.Metrics))
			}
		}
		if ok == 0 {
			t.Errorf("no case of %s measured anything", name)
		}
	})
}

// failedReasons lists the stored run's failed cases with their reasons,
// which the CSV a study prints leaves out.
func failedReasons(t *testing.T, db string) string {
	t.Helper()
	code, out, stderr := runCLI(t, "report", "--db", db, "--format", "json")
	if code != 0 {
		return "report: " + stderr
	}
	var rep struct {
		Cases []struct{ Key, Status, Reason string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return err.Error()
	}
	var lines []string
	for _, c := range rep.Cases {
		if c.Status == "failed" {
			lines = append(lines, c.Key+": "+c.Reason)
		}
	}
	return strings.Join(lines, "\n")
}
