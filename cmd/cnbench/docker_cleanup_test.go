package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cnbench/internal/cleanup"
	dockermode "cnbench/internal/mode/docker"
	"cnbench/internal/modes"
	"cnbench/internal/netns"
	"cnbench/internal/testutil"
)

const dockerCleanupScenario = `
name: docker-cleanup
duration: 1s
warmup: 0s
samples: 5
modes: [MODE]
topologies: [chhc]
workloads: [tcp_stream]
`

// TestDockerAndCNILeftoversAfterSIGKILL kills a run while its private
// dockerd and containers, or its CNI networks, are up, and requires
// cnbench cleanup to remove all of it: the containers and shims, the
// daemons' and the networks' directories, the containers' cgroups in every
// hierarchy, the namespaces and the records.
func TestDockerAndCNILeftoversAfterSIGKILL(t *testing.T) {
	testutil.RequireRoot(t)
	for _, name := range []string{dockermode.DockerPublish, "cni:bridge-portmap"} {
		d, _ := modes.Lookup(name)
		if err := d.Check("chhc"); err != nil {
			t.Skipf("skipped: %s: %v", name, err)
		}
	}
	bin := buildBinary(t)
	for _, name := range []string{dockermode.DockerPublish, "cni:bridge-portmap"} {
		t.Run(name, func(t *testing.T) { killAndClean(t, bin, name) })
	}
}

// killAndClean kills a run of mode name in its second sample, then runs
// cnbench cleanup and checks that nothing of the run is left.
func killAndClean(t *testing.T, bin, name string) {
	dir := t.TempDir()
	file := writeScenario(t, dir, "s.yaml", strings.Replace(dockerCleanupScenario, "MODE", name, 1))
	cmd := exec.Command(bin, "run", file, "--db", filepath.Join(dir, "r.db"), "--order", "sequential")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tokens := make(chan netns.Token, 1)
	sampling := make(chan struct{})
	go func() {
		tokenLine := regexp.MustCompile(`token ([0-9a-f]{4})`)
		sc := bufio.NewScanner(stderr)
		var seen bool
		for sc.Scan() {
			if m := tokenLine.FindStringSubmatch(sc.Text()); m != nil {
				tokens <- netns.Token(m[1])
			}
			if !seen && strings.Contains(sc.Text(), "sample 2/") {
				seen = true
				close(sampling)
			}
		}
	}()
	var tok netns.Token
	select {
	case tok = <-tokens:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the run printed no token within 30s")
	}
	select {
	case <-sampling:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("no sample under way within 60s")
	}
	cmd.Process.Kill()
	cmd.Wait()
	time.Sleep(200 * time.Millisecond)
	if left := leftovers(tok); len(left) == 0 {
		t.Fatalf("SIGKILL left nothing of %s behind: the test did not kill mid-run", name)
	} else {
		t.Logf("left by SIGKILL: %v", left)
	}

	var sockets []string
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tok.Name("dk-")+"*"))
	for _, d := range dirs {
		sockets = append(sockets, cleanup.ShimSockets(d)...)
	}
	if strings.HasPrefix(name, "docker:") && len(sockets) == 0 {
		t.Error("no shim sockets found for the killed run's containers")
	}
	for _, s := range sockets {
		if _, err := os.Lstat(s); err != nil {
			t.Errorf("shim socket %s of a running container not found: %v", s, err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "cleanup").CombinedOutput()
	if err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out)
	}
	t.Logf("cleanup said:\n%s", out)
	// Other runs may come and go on this machine meanwhile, so only this
	// run's objects are compared.
	if left := leftovers(tok); len(left) > 0 {
		t.Errorf("left after cleanup: %v", left)
	}
	for _, s := range sockets {
		if _, err := os.Lstat(s); err == nil {
			t.Errorf("shim socket %s left after cleanup", s)
		}
	}
	names, _ := netns.List()
	for _, n := range names {
		if netns.TokenOf(n) == tok {
			t.Errorf("namespace %s left after cleanup", n)
		}
	}
}

// leftovers lists what of run tok's private daemons, containers and CNI
// networks exists: processes whose command line or cgroup names the run,
// its directories, its cgroup trees, and its daemon records.
func leftovers(tok netns.Token) []string {
	var out []string
	mark := tok.Name("")
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		cg, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cgroup"))
		stat, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if strings.Contains(string(stat), ") Z") {
			continue
		}
		if strings.Contains(string(cmdline), mark) || strings.Contains(string(cg), mark+"dk-") {
			out = append(out, "process "+p.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), mark+"*"))
	out = append(out, dirs...)
	trees, _ := filepath.Glob("/sys/fs/cgroup/*/" + mark + "dk-*")
	out = append(out, trees...)
	if recs, _ := cleanup.Daemons(tok); len(recs) > 0 {
		out = append(out, "daemon records")
	}
	return out
}
