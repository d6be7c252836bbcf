package cleanup

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"cnbench/internal/netns"
	"cnbench/internal/testutil"
)

// TestSweepLeavesLiveRunsAndSaysSo gives a token to a live process and a
// namespace to the token: a sweep must keep the namespace and name the
// run it left alone. Once the owner has exited and sits unreaped (a
// zombie), the run counts as gone and the next sweep removes it.
func TestSweepLeavesLiveRunsAndSaysSo(t *testing.T) {
	testutil.RequireRoot(t)
	tok := netns.NewToken()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	tick, err := startTick(pid)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(Owner{PID: pid, StartTick: tick, Started: time.Now()})
	if err := os.MkdirAll(StateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ownerPath(tok), data, 0o644); err != nil {
		t.Fatal(err)
	}
	defer Release(tok)
	ns, err := netns.Create(tok.Name("h1"))
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Delete()

	r, err := Sweep()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("run %s (process %d still runs): 1 namespaces", tok, pid)
	if !slices.Contains(r.Kept, want) {
		t.Errorf("kept %q, want %q among them", r.Kept, want)
	}
	if slices.Contains(r.Namespaces, ns.Name) {
		t.Fatalf("a live run's namespace %s was removed", ns.Name)
	}

	// Exited and not reaped: a zombie holds no namespace.
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(fields) > 0 && fields[0] == "Z" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the owner did not become a zombie")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r, err = Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.Namespaces, ns.Name) || !slices.Contains(r.Tokens, string(tok)) {
		t.Errorf("after the owner exited: removed %v and tokens %v, want %s and %s", r.Namespaces, r.Tokens, ns.Name, tok)
	}
}
