package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"

	"cnbench/internal/cleanup"
	"cnbench/internal/cpu"
	"cnbench/internal/netns"
	"cnbench/internal/testutil"
)

// built is the cnbench binary the tests that run it as a real process
// share: linking it takes seconds, a dozen tests need it, and none
// changes it. TestMain removes it.
var built struct {
	once      sync.Once
	dir, path string
	err       error
}

// buildBinary compiles cnbench, once for all the tests that run it as a
// real process.
func buildBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "test-cnbench-bin-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "cnbench")
		if out, err := exec.Command("go", "build", "-o", built.path, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// systemState is what a run could leak: named namespaces, links and
// nftables tables in the root namespace, cgroups, and processes running
// the cnbench binary.
type systemState struct {
	Namespaces, Links, Tables, Cgroups, Processes []string
}

func snapshot(t *testing.T, bin string) systemState {
	t.Helper()
	var s systemState
	entries, _ := os.ReadDir(netns.RunDir)
	for _, e := range entries {
		if !foreign(e.Name(), bin) {
			s.Namespaces = append(s.Namespaces, e.Name())
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		s.Links = append(s.Links, l.Attrs().Name)
	}
	conn, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	tables, err := conn.ListTables()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		s.Tables = append(s.Tables, fmt.Sprintf("%d/%s", tb.Family, tb.Name))
	}
	if h, err := cpu.FindHierarchy(); err == nil {
		all, _ := h.List("")
		for _, c := range all {
			if !foreign(c, bin) {
				s.Cgroups = append(s.Cgroups, c)
			}
		}
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		exe, err := os.Readlink(filepath.Join("/proc", p.Name(), "exe"))
		if err == nil && exe == bin {
			s.Processes = append(s.Processes, p.Name())
		}
	}
	for _, l := range [][]string{s.Namespaces, s.Links, s.Tables, s.Cgroups, s.Processes} {
		sort.Strings(l)
	}
	return s
}

// foreign reports whether a name belongs to a cnbench run that is alive
// and was started by someone other than this test (another run on the
// machine): its objects come and go on their own schedule and are none
// of this test's business.
func foreign(name, bin string) bool {
	tok := netns.TokenOf(name)
	if tok == "" {
		return false
	}
	o, err := cleanup.OwnerOf(tok)
	if err != nil || !o.Alive() {
		return false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", o.PID))
	if err != nil {
		return false
	}
	self, _ := os.Executable()
	return exe != bin && exe != self
}

func requireSame(t *testing.T, when string, before, after systemState) {
	t.Helper()
	if !reflect.DeepEqual(before, after) {
		t.Errorf("%s: system state changed\nbefore: %+v\nafter:  %+v", when, before, after)
	}
}

// writeScenario writes a scenario file named name in dir and returns its
// path.
func writeScenario(t *testing.T, dir, name, text string) string {
	t.Helper()
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

const cleanupScenario = `
name: cleanup
duration: 1s
warmup: 0s
samples: 3
modes: [nat, macvlan]
topologies: [chhc]
workloads: [tcp_stream]
`

// startRun starts the binary on the cleanup scenario and returns once it
// reports its first sample under way, so a signal lands mid-measurement.
func startRun(t *testing.T, bin, dir string) (*exec.Cmd, <-chan error) {
	t.Helper()
	file := writeScenario(t, dir, "s.yaml", cleanupScenario)
	cmd := exec.Command(bin, "run", file, "--db", filepath.Join(dir, "r.db"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampling := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			if !seen && strings.Contains(sc.Text(), "sample 1/") {
				seen = true
				close(sampling)
			}
		}
	}()
	select {
	case <-sampling:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("no sample started within 30s")
	}
	time.Sleep(300 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return cmd, done
}

func TestNothingLeftBehind(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	before := snapshot(t, bin)

	t.Run("after a run", func(t *testing.T) {
		file := filepath.Join(dir, "s.yaml")
		os.WriteFile(file, []byte(cleanupScenario), 0o644)
		out, err := exec.Command(bin, "run", file, "--db", filepath.Join(dir, "r.db"), "--samples", "1", "--quiet").CombinedOutput()
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		requireSame(t, "after a run", before, snapshot(t, bin))
	})

	t.Run("after SIGINT mid-run", func(t *testing.T) {
		cmd, done := startRun(t, bin, dir)
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-done:
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
				t.Errorf("exit code %d after SIGINT (%v), want %d", code, err, exitInterrupted)
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatal("cnbench did not stop within 20s of SIGINT")
		}
		requireSame(t, "after SIGINT", before, snapshot(t, bin))
	})

	t.Run("after SIGKILL and cleanup", func(t *testing.T) {
		cmd, done := startRun(t, bin, dir)
		cmd.Process.Kill()
		<-done
		// The engines die with their parent; give the kernel a moment.
		time.Sleep(200 * time.Millisecond)
		mid := snapshot(t, bin)
		if reflect.DeepEqual(before.Namespaces, mid.Namespaces) {
			t.Error("SIGKILL left no namespaces behind: the test did not kill mid-run")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, "cleanup").CombinedOutput()
		if err != nil {
			t.Fatalf("cleanup: %v\n%s", err, out)
		}
		t.Logf("cleanup said:\n%s", out)
		if !strings.Contains(string(out), "removed namespace") {
			t.Errorf("cleanup printed no removed namespace:\n%s", out)
		}
		requireSame(t, "after SIGKILL and cleanup", before, snapshot(t, bin))
	})
}
