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
	// What runs that died before this test left (a suite killed mid-run,
	// say) cleanup rightly removes too: no change of this test's making.
	before := snapshot(t, bin)
	dead := deadRuns(before)
	before = before.without(dead)
	if len(dead) > 0 {
		t.Logf("left aside: the objects of runs that died before this test, %v", dead)
	}

	t.Run("after a run", func(t *testing.T) {
		file := filepath.Join(dir, "s.yaml")
		os.WriteFile(file, []byte(cleanupScenario), 0o644)
		out, err := exec.Command(bin, "run", file, "--db", filepath.Join(dir, "r.db"), "--samples", "1", "--quiet").CombinedOutput()
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		requireSame(t, "after a run", before, snapshot(t, bin).without(dead))
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
		requireSame(t, "after SIGINT", before, snapshot(t, bin).without(dead))
	})

	t.Run("after SIGKILL and cleanup", func(t *testing.T) {
		cmd, done := startRun(t, bin, dir)
		cmd.Process.Kill()
		<-done
		// The engines die with their parent; give the kernel a moment.
		time.Sleep(200 * time.Millisecond)
		mid := snapshot(t, bin).without(dead)
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
		requireSame(t, "after SIGKILL and cleanup", before, snapshot(t, bin).without(dead))
	})
}

// deadRuns are the tokens of the runs whose objects s holds and whose
// process is gone.
func deadRuns(s systemState) map[netns.Token]bool {
	dead := map[netns.Token]bool{}
	for _, l := range [][]string{s.Namespaces, s.Links, s.Cgroups} {
		for _, name := range l {
			tok := netns.TokenOf(name)
			if tok == "" {
				continue
			}
			if o, err := cleanup.OwnerOf(tok); err != nil || !o.Alive() {
				dead[tok] = true
			}
		}
	}
	return dead
}

// without is s less the objects of the runs toks names.
func (s systemState) without(toks map[netns.Token]bool) systemState {
	keep := func(names []string) []string {
		var out []string
		for _, n := range names {
			if !toks[netns.TokenOf(n)] {
				out = append(out, n)
			}
		}
		return out
	}
	s.Namespaces, s.Links, s.Cgroups = keep(s.Namespaces), keep(s.Links), keep(s.Cgroups)
	return s
}

// TestCleanupForgetsDeadClusters leaves records of clusters as "cluster
// up" writes them, one whose process is gone and one whose process (this
// test) runs: cleanup forgets the first, with its log and kubeconfig, and
// keeps the second, so "cluster status" no longer lists a dead cluster.
func TestCleanupForgetsDeadClusters(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	record := func(tok netns.Token, kubeconfig string) clusterRecord {
		t.Helper()
		r := clusterRecord{Token: tok, Kubeconfig: filepath.Join(dir, string(tok)+".kubeconfig"), APIServer: "127.0.0.1:1",
			CNI: "bridge", Nodes: []string{tok.Name("k8sn1"), tok.Name("k8sn2")}, Log: filepath.Join(dir, string(tok)+".log"), Started: time.Now()}
		for f, text := range map[string]string{r.Kubeconfig: kubeconfig, r.Log: "started\n"} {
			if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := writeRecord(r); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.forget() })
		return r
	}
	live := liveToken(t)
	dead, rewritten := netns.NewToken(), netns.NewToken()
	kept := record(live, "server: https://127.0.0.1:1\n")
	gone := record(dead, "server: https://127.0.0.1:1\n")
	theirs := record(rewritten, "server: https://10.9.9.9:6443\n") // rewritten since: not cnbench's any more

	code, out, errOut := runCLI(t, "cleanup")
	t.Logf("cleanup said:\n%s%s", out, errOut)
	if code != 0 {
		t.Fatalf("cleanup exited %d", code)
	}
	for _, tok := range []netns.Token{dead, rewritten} {
		if !strings.Contains(out, "forgot cluster "+string(tok)) {
			t.Errorf("cleanup did not say it forgot cluster %s", tok)
		}
	}
	if strings.Contains(out, "forgot cluster "+string(live)) {
		t.Errorf("cleanup forgot cluster %s, whose process runs", live)
	}
	exists := func(f string) bool { _, err := os.Stat(f); return err == nil }
	for _, f := range []string{recordPath(dead), gone.Log, gone.Kubeconfig, recordPath(rewritten), theirs.Log} {
		if exists(f) {
			t.Errorf("%s is left after cleanup", f)
		}
	}
	for _, f := range []string{recordPath(live), kept.Log, kept.Kubeconfig, theirs.Kubeconfig} {
		if !exists(f) {
			t.Errorf("cleanup removed %s", f)
		}
	}
	_, status, _ := runCLI(t, "cluster", "status")
	if !strings.Contains(status, "cluster "+string(live)+": up") || strings.Contains(status, string(dead)) {
		t.Errorf("cluster status after cleanup:\n%s", status)
	}
}

// TestClusterDownPicksTheLiveCluster: without a token, "cluster down"
// takes the one cluster that is up, though a dead one is recorded beside
// it, and asks for a token when two are up.
func TestClusterDownPicksTheLiveCluster(t *testing.T) {
	testutil.RequireRoot(t)
	dead, up, second := clusterRecord{Token: netns.NewToken()}, clusterRecord{Token: liveToken(t)}, clusterRecord{Token: liveToken(t)}
	for _, c := range []struct {
		labs []clusterRecord
		want netns.Token // "" for a refusal
	}{
		{[]clusterRecord{dead, up}, up.Token},
		{[]clusterRecord{up, dead}, up.Token},
		{[]clusterRecord{dead}, dead.Token},
		{[]clusterRecord{dead, up, second}, ""},
	} {
		r, err := pickCluster(c.labs, nil)
		if c.want == "" && err == nil || c.want != "" && (err != nil || r.Token != c.want) {
			t.Errorf("of %d recorded clusters, down picked %q (%v), want %q", len(c.labs), r.Token, err, c.want)
		}
	}
}

// liveToken is a new run token owned by the test's own process, which is
// alive, until the test ends.
func liveToken(t *testing.T) netns.Token {
	t.Helper()
	tok := netns.NewToken()
	if err := cleanup.Claim(tok); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanup.Release(tok) })
	return tok
}
